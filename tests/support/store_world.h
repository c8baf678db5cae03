/* For the plugin host's suites: the state store on an in-memory database,
 * opened before each test by store_setup and closed after it by
 * store_teardown; db and store are that test's. */
#ifndef UST_TEST_STORE_WORLD_H
#define UST_TEST_STORE_WORLD_H

#include "support.h"

#include <understudy/host.h>
#include <understudy/runner.h>

#include <sqlite3.h>

extern sqlite3 *db;
extern ust_store *store;

int store_setup(void **state);
int store_teardown(void **state);

/* Decides an event that has only its seq (no fields, no request): what a
 * test of the protocol around a plugin needs, whatever it decides. */
void ust_test_decide_seq(ust_plugin *p, int64_t seq, ust_decision *d);

#endif
