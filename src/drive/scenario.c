/* Scenario files: loading and validating them, and rendering their steps
 * into requests signed for the times they are sent at. */
#include <understudy/alloc.h>
#include <understudy/array.h>
#include <understudy/drive.h>
#include <understudy/error.h>
#include <understudy/host.h>
#include <understudy/sig.h>

#include <stdlib.h>
#include <string.h>

static const char *const sign_names[] = {"valid", "invalid", "none", "expired",
                                         "rotated"};

void ust_scenario_free(ust_scenario *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n_steps; i++) {
        ust_free(s->steps[i].body);
        json_decref(s->steps[i].headers);
        ust_free(s->steps[i].webhook_id);
        json_decref(s->steps[i].expect);
    }
    ust_free(s->steps);
    json_decref(s->divergences);
    ust_free(s->file);
    ust_free(s->name);
    ust_free(s->shows);
    ust_free(s);
}

/* An expectation is a verdict name, "not_fed", or one of those per copy. */
static int valid_outcome(json_t *v, int copies)
{
    ust_verdict verdict;
    if (json_is_string(v))
        return strcmp(json_string_value(v), "not_fed") == 0 ||
               ust_verdict_parse(json_string_value(v), &verdict) == 0;
    if (!json_is_array(v) || (int)json_array_size(v) != copies)
        return 0;
    size_t i;
    json_t *item;
    json_array_foreach(v, i, item) if (!valid_outcome(item, 1)) return 0;
    return 1;
}

static int load_step(const char *file, size_t i, json_t *js, const ust_config *cfg,
                     ust_step *st, char **err)
{
#define BAD(what) return ust_errf(err, UST_ECONFIG, "%s: steps[%zu].%s", file, i, what)
    if (!json_is_object(js))
        return ust_errf(err, UST_ECONFIG, "%s: steps[%zu]: expected an object", file,
                        i);
    json_t *at = json_object_get(js, "at");
    if (at != NULL && !json_is_number(at))
        BAD("at: expected seconds from the start (a number)");
    st->at_s = at ? json_number_value(at) : 0;
    const char *route = json_string_value(json_object_get(js, "route"));
    if (route == NULL || (st->route = ust_config_route(cfg, route)) == NULL)
        BAD("route: expected a path the config routes");
    json_t *body = json_object_get(js, "body"), *raw = json_object_get(js, "body_raw");
    if ((body == NULL) == (raw == NULL))
        BAD("body: expected either \"body\" (JSON) or \"body_raw\" (a string)");
    if (raw != NULL && !json_is_string(raw))
        BAD("body_raw: expected a string");
    char *text = raw ? NULL : json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
    st->body = ust_strdup(raw ? json_string_value(raw) : text);
    ust_free(text);
    if (st->body == NULL)
        return UST_ENOMEM;
    json_t *headers = json_object_get(js, "headers");
    if (headers != NULL) {
        const char *k;
        json_t *v;
        if (!json_is_object(headers))
            BAD("headers: expected an object of strings");
        json_object_foreach(headers, k, v) if (!json_is_string(v))
            BAD("headers: expected an object of strings");
        st->headers = json_incref(headers);
    }
    const char *sign = json_string_value(json_object_get(js, "sign"));
    st->sign = UST_SIGN_VALID;
    if (sign != NULL) {
        size_t k = 0;
        while (k < UST_ARRAY_SIZE(sign_names) && strcmp(sign, sign_names[k]))
            k++;
        if (k == UST_ARRAY_SIZE(sign_names))
            BAD("sign: expected valid, invalid, none, expired or rotated");
        st->sign = (ust_sign_mode)k;
    }
    const char *wid = json_string_value(json_object_get(js, "webhook_id"));
    const ust_sig_scheme_info *si = ust_sig_scheme_info_of(st->route->scheme);
    if (si != NULL && si->needs_msg_id && wid == NULL)
        return ust_errf(err, UST_ECONFIG,
                        "%s: steps[%zu].webhook_id: a %s route needs one", file, i,
                        ust_sig_scheme_name(st->route->scheme));
    st->webhook_id = ust_strdup(wid);
    json_t *copies = json_object_get(js, "copies");
    if (copies != NULL && (!json_is_integer(copies) || json_integer_value(copies) < 1 ||
                           json_integer_value(copies) > 1000))
        BAD("copies: expected a number from 1 to 1000");
    st->copies = copies ? (int)json_integer_value(copies) : 1;
    st->timing_sensitive = json_is_true(json_object_get(js, "timing_sensitive"));
    json_t *expect = json_object_get(js, "expect");
    if (!json_is_object(expect) ||
        !valid_outcome(json_object_get(expect, "legacy"), st->copies) ||
        !valid_outcome(json_object_get(expect, "candidate"), st->copies))
        BAD("expect: expected {\"legacy\": V, \"candidate\": V}, V a verdict or "
            "\"not_fed\""
            " (or an array with one per copy)");
    st->expect = json_incref(expect);
    return 0;
#undef BAD
}

int ust_scenario_load(const char *path, const ust_config *cfg, ust_scenario **out,
                      char **err)
{
    *out = NULL;
    json_error_t jerr;
    json_t *doc = ust_json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (doc == NULL)
        return ust_errf(err, UST_ECONFIG, "%s:%d:%d: %s", path, jerr.line, jerr.column,
                        jerr.text);
    ust_scenario *s = ust_calloc(1, sizeof(*s));
    json_t *steps = json_object_get(doc, "steps");
    int rc = s ? 0 : UST_ENOMEM;
    if (rc == 0 && (s->file = ust_strdup(path)) == NULL)
        rc = UST_ENOMEM;
    if (rc == 0 && !json_is_string(json_object_get(doc, "name")))
        rc = ust_errf(err, UST_ECONFIG, "%s: name: expected a string", path);
    if (rc == 0 && (!json_is_array(steps) || json_array_size(steps) == 0))
        rc = ust_errf(err, UST_ECONFIG, "%s: steps: expected a non-empty array", path);
    if (rc == 0) {
        s->name = ust_strdup(json_string_value(json_object_get(doc, "name")));
        s->shows = ust_strdup(json_string_value(json_object_get(doc, "shows")));
        s->steps = ust_calloc(json_array_size(steps), sizeof(*s->steps));
        if (s->steps == NULL)
            rc = UST_ENOMEM;
    }
    for (size_t i = 0; rc == 0 && i < json_array_size(steps); i++) {
        rc = load_step(path, i, json_array_get(steps, i), cfg, &s->steps[i], err);
        s->n_steps = i + 1;
    }
    json_t *divs = json_object_get(doc, "divergences");
    if (rc == 0 && divs != NULL && !json_is_array(divs))
        rc = ust_errf(err, UST_ECONFIG, "%s: divergences: expected an array", path);
    size_t i;
    json_t *d;
    json_array_foreach(divs, i, d)
    {
        json_t *step = json_object_get(d, "step");
        if (rc == 0 && (!json_is_integer(step) || json_integer_value(step) < 0 ||
                        (size_t)json_integer_value(step) >= s->n_steps ||
                        !json_is_string(json_object_get(d, "class")) ||
                        !json_is_array(json_object_get(d, "fields"))))
            rc = ust_errf(
                err, UST_ECONFIG,
                "%s: divergences[%zu]: expected {\"step\": index, \"class\": ...,"
                " \"fields\": [...]}",
                path, i);
    }
    if (rc == 0)
        s->divergences = divs ? json_incref(divs) : json_array();
    json_decref(doc);
    if (rc != 0) {
        ust_scenario_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

static int add_headers(ust_request *r, json_t *headers)
{
    const char *k;
    json_t *v;
    json_object_foreach(
        headers, k,
        v) if (ust_request_add_header(r, k, json_string_value(v))) return UST_ENOMEM;
    return 0;
}

/* Signs r for unix time t according to the step's sign mode, with the
 * secrets the scheme's entry gives for each mode. */
static int sign(const ust_step *st, int64_t t, ust_request *r, char **err)
{
    const ust_route *route = st->route;
    const ust_sig_scheme_info *si = ust_sig_scheme_info_of(route->scheme);
    if (si == NULL || st->sign == UST_SIGN_NONE)
        return 0;
    if (route->secret == NULL)
        return ust_errf(err, UST_ECONFIG, "%s: the secret for %s is not loaded (%s)",
                        route->path, route->path, route->secret_env);
    ust_sig_params p = {route->scheme, route->secret, route->sig_header,
                        route->tolerance_s};
    const char *secrets[2] = {route->secret, NULL};
    size_t n = 1;
    if (st->sign == UST_SIGN_INVALID)
        secrets[0] = si->wrong_secret;
    if (st->sign == UST_SIGN_EXPIRED)
        t -= 3600;
    if (st->sign == UST_SIGN_ROTATED && si->previous_secret != NULL) {
        secrets[0] = si->previous_secret;
        secrets[1] = route->secret;
        n = 2;
    }
    return ust_sig_sign_with(&p, secrets, n, t, st->webhook_id, r);
}

int ust_step_render(const ust_step *st, int64_t at_us, ust_request *r, char **err)
{
    memset(r, 0, sizeof(*r));
    r->received_at_us = at_us;
    r->remote = ust_strdup("192.0.2.10:443");
    r->method = ust_strdup("POST");
    r->target = ust_strdup(st->route->path);
    r->body_len = strlen(st->body);
    r->body = (unsigned char *)ust_strdup(st->body);
    int rc = 0;
    if (!r->remote || !r->method || !r->target || !r->body ||
        ust_request_add_header(r, "Content-Type", "application/json") != 0 ||
        add_headers(r, st->headers) != 0)
        rc = UST_ENOMEM;
    if (rc == 0)
        rc = sign(st, at_us / 1000000, r, err);
    if (rc != 0)
        ust_request_clear(r);
    return rc;
}

int ust_scenario_render(const ust_scenario *s, int64_t start_us, ust_request **reqs,
                        size_t *n, char **err)
{
    size_t total = 0;
    for (size_t i = 0; i < s->n_steps; i++)
        total += (size_t)s->steps[i].copies;
    ust_request *out = ust_calloc(total, sizeof(*out));
    if (out == NULL)
        return UST_ENOMEM;
    size_t k = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < s->n_steps; i++) {
        const ust_step *st = &s->steps[i];
        for (int c = 0; rc == 0 && c < st->copies; c++, k++)
            rc =
                ust_step_render(st, start_us + (int64_t)(st->at_s * 1e6), &out[k], err);
    }
    if (rc != 0) {
        for (size_t i = 0; i < total; i++)
            ust_request_clear(&out[i]);
        ust_free(out);
        return rc;
    }
    *reqs = out;
    *n = total;
    return 0;
}
