/* The plugin host suites' state store (store_world.h). */
#include "store_world.h"

sqlite3 *db;
ust_store *store;

int store_setup(void **state)
{
    (void)state;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    char *err = NULL;
    assert_int_equal(ust_store_open(db, &store, &err), 0);
    return 0;
}

int store_teardown(void **state)
{
    (void)state;
    ust_store_close(store);
    sqlite3_close(db);
    return 0;
}

void ust_test_decide_seq(ust_plugin *p, int64_t seq, ust_decision *d)
{
    ust_event ev;
    memset(&ev, 0, sizeof(ev));
    ust_request req;
    memset(&req, 0, sizeof(req));
    ev.seq = seq;
    ust_plugin_decide(p, &ev, &req, d);
}
