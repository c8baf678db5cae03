/* The outside names and orders of the event and the decision, which the
 * field tables (event_fields.h, host.h) generate: each encoding is a
 * contract (old logs, plugins in other languages, divergence files), so a
 * table edited the wrong way fails here by name, not somewhere downstream. */
#include "support.h"

#include "log/log_internal.h"
#include "plugin/event_abi.h"
#include "plugin/wire.h"
#include "runner/decision_row.h"

#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/host.h>
#include <understudy/jsonw.h>

#include <string.h>

static ust_route route = {.path = "/payments", .kind = UST_ROUTE_API};

static ust_event full_event(void)
{
    ust_event ev = {.seq = 7,
                    .received_at_us = 1795946400123456,
                    .route = &route,
                    .provider = "p",
                    .event_id = "e",
                    .identity = "i",
                    .event_type = "t",
                    .transaction_id = "x",
                    .target_status = "paid",
                    .amount = 5,
                    .has_amount = 1,
                    .currency = "eur",
                    .intent = "o",
                    .idem_key = "k",
                    .tenant = "n",
                    .sig = UST_SIG_VERIFIED};
    memset(ev.request_sha256, 'a', UST_SHA256_HEX_LEN);
    return ev;
}

static ust_decision full_decision(void)
{
    static char *flags[] = {"f1", "f2"};
    ust_decision d = {.verdict = UST_VERDICT_APPLIED,
                      .http_status = 201,
                      .state_before = "pending",
                      .state_after = "paid",
                      .entity = "en",
                      .flags = flags,
                      .n_flags = 2,
                      .body = "{\"a\":1}",
                      .reason = "r",
                      .error = "boom"};
    d.headers = json_pack("{s:s}", "h", "v");
    return d;
}

static void test_the_log_columns_are_those_of_every_log_written(void **state)
{
    (void)state;
    assert_string_equal(
        UST__LOG_COLUMNS,
        "seq, received_at, remote, method, target, headers, body, route, "
        "provider, event_id, identity, request_sha256, signature, "
        "config_hash, event_type, transaction_id, target_status, amount, "
        "currency, intent, idem_key, tenant, prev_hash, hash");
    /* Format 3 added the recorded answer after them (ALTER TABLE appends). */
    assert_string_equal(UST__LOG_RESPONSE_COLUMNS,
                        "response_status, response_headers, response_body");
    assert_int_equal(UST__LOG_N_COLUMNS, 27);
}

/* Keys in the order protocol 2 has sent them: request_sha256 last. */
static void test_a_decide_message_names_every_field_in_its_place(void **state)
{
    (void)state;
    ust_event ev = full_event();
    ust_jsonw w = {0};
    ust__wire_decide(&w, &ev, NULL);
    assert_string_equal(
        w.buf,
        "{\"type\":\"decide\",\"event\":{\"seq\":7,\"received_at_us\":1795946400123456,"
        "\"route_kind\":\"api\",\"route\":\"/payments\",\"provider\":\"p\","
        "\"event_id\":\"e\",\"event_type\":\"t\",\"transaction_id\":\"x\","
        "\"target_status\":\"paid\",\"amount\":5,\"currency\":\"eur\",\"intent\":\"o\","
        "\"idempotency_key\":\"k\",\"tenant\":\"n\",\"request_sha256\":"
        "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}}");
    ust_jsonw_free(&w);
}

/* The ABI struct gets every field a plugin is sent, under its wire name. */
static void test_the_abi_event_has_every_field_sent(void **state)
{
    (void)state;
    ust_event ev = full_event();
    ust_request req;
    memset(&req, 0, sizeof(req));
    ust_plugin_event pe;
    ust__plugin_event_from(&ev, &req, &pe, NULL);
    assert_int_equal(pe.size, sizeof(pe));
    assert_int_equal(pe.seq, 7);
    const char *got[][2] = {
        {pe.route_kind, "api"},     {pe.route, "/payments"}, {pe.provider, "p"},
        {pe.event_id, "e"},         {pe.event_type, "t"},    {pe.transaction_id, "x"},
        {pe.target_status, "paid"}, {pe.currency, "eur"},    {pe.intent, "o"},
        {pe.idempotency_key, "k"},  {pe.tenant, "n"},
    };
    for (size_t i = 0; i < UST_ARRAY_SIZE(got); i++)
        assert_string_equal(got[i][0], got[i][1]);
    assert_int_equal(pe.amount, 5);
    assert_true(pe.has_amount);
    assert_ptr_equal(pe.request_sha256, ev.request_sha256);
}

/* One decision, four encodings, each with the names it has always had. */
static void test_a_decision_keeps_each_encodings_names(void **state)
{
    (void)state;
    ust_decision d = full_decision();
    ust_jsonw w = {0};
    ust_decision_write_json(&w, &d);
    assert_string_equal(
        w.buf, "{\"verdict\":\"applied\",\"status\":201,\"state\":\"paid\","
               "\"state_before\":\"pending\",\"entity\":\"en\","
               "\"flags\":[\"f1\",\"f2\"],\"body\":{\"a\":1},"
               "\"headers\":{\"h\":\"v\"},\"reason\":\"r\",\"error\":\"boom\"}");
    ust_jsonw_reset(&w);
    ust__wire_decision(&w, 3, &d, NULL);
    assert_string_equal(
        w.buf, "{\"type\":\"decision\",\"seq\":3,\"decision\":{\"verdict\":\"applied\","
               "\"status\":201,\"state_before\":\"pending\",\"state_after\":\"paid\","
               "\"entity\":\"en\",\"flags\":[\"f1\",\"f2\"],"
               "\"body_json\":\"{\\\"a\\\":1}\",\"headers\":{\"h\":\"v\"},"
               "\"reason\":\"r\"}}");
    ust_jsonw_free(&w);
    assert_string_equal(UST__DECISION_COLUMN_NAMES,
                        "verdict, status, state_before, state, "
                        "flags, body, headers, reason, error");
    assert_string_equal(
        UST__DECISION_COLUMN_NAMES_AS(c_),
        "c_verdict, c_status, c_state_before, c_state, c_flags, c_body, "
        "c_headers, c_reason, c_error");
    assert_string_equal(
        UST__DECISION_COLUMN_DEFS(l_),
        ", l_verdict TEXT, l_status INTEGER, l_state_before TEXT, l_state "
        "TEXT, l_flags TEXT, l_body TEXT, l_headers TEXT, l_reason TEXT, "
        "l_error TEXT");
    assert_string_equal(
        UST__DECISION_COLUMN_DEFS_NOT_NULL(),
        ", verdict TEXT NOT NULL, status INTEGER NOT NULL, state_before TEXT, "
        "state TEXT, flags TEXT, body TEXT, headers TEXT, reason TEXT, error TEXT");
    assert_int_equal(UST__DECISION_COLUMNS, 9);
    assert_string_equal(UST__DECISION_MARKS, ",?,?,?,?,?,?,?,?,?");
    json_decref(d.headers);
}

/* Through the columns and back, and through the wire and back: the same
 * decision (the entity from its own column; the error never on the wire). */
static void test_a_decision_comes_back_from_its_columns_and_the_wire(void **state)
{
    (void)state;
    ust_decision d = full_decision();
    sqlite3 *db;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db, "CREATE TABLE t(entity TEXT" UST__DECISION_COLUMN_DEFS() ");",
                     NULL, NULL, NULL),
        SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?,?,?,?,?,?,?,?,?,?)",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, d.entity, -1, SQLITE_STATIC);
    ust__decision_bind(st, 2, &d);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    assert_int_equal(
        sqlite3_prepare_v2(db, "SELECT entity, " UST__DECISION_COLUMN_NAMES " FROM t",
                           -1, &st, NULL),
        SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    ust_decision back;
    assert_int_equal(
        ust__decision_read(st, 1, (const char *)sqlite3_column_text(st, 0), &back), 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    ust_jsonw a = {0}, b = {0};
    ust_decision_write_json(&a, &d);
    ust_decision_write_json(&b, &back);
    assert_string_equal(a.buf, b.buf);
    ust_decision_clear(&back);

    ust_jsonw_reset(&a);
    ust__wire_decision(&a, 3, &d, NULL);
    json_error_t jerr;
    json_t *msg = json_loads(a.buf, 0, &jerr);
    assert_non_null(msg);
    assert_null(ust__wire_decision_parse(json_object_get(msg, "decision"), &back));
    json_decref(msg);
    d.error = NULL;
    ust_jsonw_reset(&a);
    ust_jsonw_reset(&b);
    ust_decision_write_json(&a, &d);
    ust_decision_write_json(&b, &back);
    assert_string_equal(a.buf, b.buf);
    ust_decision_clear(&back);
    ust_jsonw_free(&a);
    ust_jsonw_free(&b);
    json_decref(d.headers);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_log_columns_are_those_of_every_log_written),
        cmocka_unit_test(test_a_decide_message_names_every_field_in_its_place),
        cmocka_unit_test(test_the_abi_event_has_every_field_sent),
        cmocka_unit_test(test_a_decision_keeps_each_encodings_names),
        cmocka_unit_test(test_a_decision_comes_back_from_its_columns_and_the_wire),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
