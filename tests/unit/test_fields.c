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

/* A row as every format held it: each field of the table, the request, no
 * answer (a format-2 log has no answer columns). Fixed, so its log's head
 * is FIELDS_HEAD whatever the version: a row's hash never changes. */
static void old_row(ust_log_record *rec, int i)
{
    memset(rec, 0, sizeof(*rec));
    rec->req.received_at_us = 1795946400000000 + i;
    rec->req.remote = "127.0.0.1:5000";
    rec->req.method = "POST";
    rec->req.target = "/payments";
    rec->req.body = (unsigned char *)"{}";
    rec->req.body_len = 2;
    rec->route = "/payments";
    rec->provider = "p";
    rec->event_id = i ? "e1" : NULL;
    rec->identity = "i";
    memset(rec->request_sha256, 'a', UST_SHA256_HEX_LEN);
    rec->sig = UST_SIG_VERIFIED;
    rec->event_type = "t";
    rec->transaction_id = "x";
    rec->target_status = "paid";
    rec->amount = 5;
    rec->has_amount = i > 0;
    rec->currency = "eur";
    rec->intent = "o";
    rec->idem_key = "k";
    rec->tenant = "n";
}
#define FIELDS_HEAD "deffb29b44b2f95e61961844433e9561c97048d9159d1fd9efe2f86c8525723d"

/* A field of a later format than the log's, set in a row appended after the
 * upgrade, and absent when read from a row written before it. */
#define LATE_SET_TEXT(m) rec->m = #m;
#define LATE_SET_AMOUNT(m) (rec->m = 9, rec->has_##m = 1);
#define LATE_SET_ROUTE(m)
#define LATE_SET_SHA(m)
#define LATE_SET_SIG(m)
#define LATE_SET_CONFIG(m)
#define LATE_SET(kind, m, column, wire, wire_at, export, source, since, desc)          \
    if (since > format)                                                                \
    LATE_SET_##kind(m)
static void set_late(ust_log_record *rec, int format)
{
    UST_EVENT_FIELDS(LATE_SET)
}

#define LATE_ABSENT_TEXT(m) assert_null(rec->m);
#define LATE_ABSENT_AMOUNT(m) assert_false(rec->has_##m);
#define LATE_PRESENT_TEXT(m) assert_string_equal(rec->m, #m);
#define LATE_PRESENT_AMOUNT(m) assert_int_equal(rec->m, 9);
#define LATE_ABSENT_ROUTE(m)
#define LATE_ABSENT_SHA(m)
#define LATE_ABSENT_SIG(m)
#define LATE_ABSENT_CONFIG(m)
#define LATE_PRESENT_ROUTE(m)
#define LATE_PRESENT_SHA(m)
#define LATE_PRESENT_SIG(m)
#define LATE_PRESENT_CONFIG(m)
#define LATE_CHECK(kind, m, column, wire, wire_at, export, source, since, desc)        \
    if (since > format) {                                                              \
        if (present) {                                                                 \
            LATE_PRESENT_##kind(m)                                                     \
        } else {                                                                       \
            LATE_ABSENT_##kind(m)                                                      \
        }                                                                              \
    }
static void check_late(const ust_log_record *rec, int format, int present)
{
    UST_EVENT_FIELDS(LATE_CHECK)
}

/* The log as a version of format `format` left it: none of the columns that
 * came later (the fields', from their since; the answer's, format 3; the
 * prune chain's, format 2) and its format in meta. */
static void make_format(const char *db, int format)
{
    for (size_t i = 0; i < UST__LOG_N_FIELDS; i++) {
        if (ust__log_fields[i].since <= format)
            continue;
        char *drop =
            ust_sprintf("ALTER TABLE events DROP COLUMN %s", ust__log_fields[i].column);
        ust_test_sql(db, drop);
        ust_free(drop);
    }
    if (format < 3)
        ust_test_sql(db, "ALTER TABLE events DROP COLUMN response_status;"
                         "ALTER TABLE events DROP COLUMN response_headers;"
                         "ALTER TABLE events DROP COLUMN response_body;");
    if (format < 2)
        ust_test_sql(db, "ALTER TABLE prunes DROP COLUMN tip_seq;"
                         "ALTER TABLE prunes DROP COLUMN link_prev;"
                         "ALTER TABLE prunes DROP COLUMN prev_hash;"
                         "ALTER TABLE prunes DROP COLUMN hash;"
                         "DELETE FROM meta WHERE key = 'legacy_prunes'");
    char *meta = ust_sprintf(
        "UPDATE meta SET value = 'understudy-log-%d' WHERE key = 'format'", format);
    ust_test_sql(db, meta);
    ust_free(meta);
}

static void expect_head(ust_log *log, int64_t seq, const char *hex)
{
    ust_log_verify_result res;
    char *err = NULL;
    if (ust_log_verify(log, &res, &err) != 0)
        fail_msg("verify: seq %lld: %s", (long long)res.bad_seq, res.reason);
    assert_int_equal(res.head_seq, seq);
    if (hex != NULL)
        assert_string_equal(res.head_hash, hex);
}

static void read_row(ust_log *log, int64_t seq, ust_log_record *rec)
{
    ust_log_cursor *cur = NULL;
    char *err = NULL;
    assert_int_equal(ust_log_cursor_open(log, seq - 1, &cur, &err), 0);
    assert_int_equal(ust_log_cursor_next(cur, rec, &err), 1);
    ust_log_cursor_close(cur);
}

/* An old log of every earlier format opens as it is (its newest fields read
 * as absent) and verifies with its old head; a writing open upgrades it,
 * the head unchanged, and a row with the newest fields then verifies and
 * reads them back. */
static void test_an_old_sqlite_log_of_every_format_upgrades(void **state)
{
    (void)state;
    char dir[PATH_MAX], db[PATH_MAX + 16];
    ust_test_tmpdir(dir);
    for (int format = 1; format < ust__log_format(); format++) {
        snprintf(db, sizeof(db), "%s/f%d.db", dir, format);
        ust_log *log = NULL;
        char *err = NULL;
        assert_int_equal(ust_log_open(db, UST_LOG_CREATE, &log, &err), 0);
        for (int i = 0; i < 2; i++) {
            ust_log_record rec;
            old_row(&rec, i);
            assert_int_equal(ust_log_append(log, &rec, 1, NULL, &err), 0);
        }
        expect_head(log, 2, FIELDS_HEAD);
        ust_log_close(log);
        make_format(db, format);

        assert_int_equal(ust_log_open(db, UST_LOG_READONLY, &log, &err), 0);
        expect_head(log, 2, FIELDS_HEAD);
        ust_log_record got;
        read_row(log, 2, &got);
        check_late(&got, format, 0);
        ust_log_record_clear(&got);
        ust_log_close(log);

        assert_int_equal(ust_log_open(db, 0, &log, &err), 0);
        expect_head(log, 2, FIELDS_HEAD);
        ust_log_record rec;
        old_row(&rec, 3);
        set_late(&rec, format);
        assert_int_equal(ust_log_append(log, &rec, 1, NULL, &err), 0);
        expect_head(log, 3, NULL);
        read_row(log, 2, &got);
        check_late(&got, format, 0);
        ust_log_record_clear(&got);
        read_row(log, 3, &got);
        check_late(&got, format, 1);
        ust_log_record_clear(&got);
        ust_log_close(log);
    }
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
        cmocka_unit_test(test_an_old_sqlite_log_of_every_format_upgrades),
        cmocka_unit_test(test_a_decide_message_names_every_field_in_its_place),
        cmocka_unit_test(test_the_abi_event_has_every_field_sent),
        cmocka_unit_test(test_a_decision_keeps_each_encodings_names),
        cmocka_unit_test(test_a_decision_comes_back_from_its_columns_and_the_wire),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
