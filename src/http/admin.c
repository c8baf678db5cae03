/* The admin listener's answers: /healthz, /readyz and /metrics, read from
 * the server's state on the loop; nothing there is ever recorded. */
#include "http/server.h"

#include <understudy/alloc.h>
#include <understudy/clock.h>

#include <stdatomic.h>
#include <string.h>

static void answer_plain(ust__conn *c, int status, const char *ct, const char *extra,
                         const char *body, int keep_alive)
{
    ust__slot *slot = ust__conn_new_slot(c);
    if (slot == NULL)
        return;
    slot->close_after = !keep_alive;
    ust__reply_set(slot, status, ct, extra, body);
}

/* The admin listener's three paths; nothing there is ever recorded. */
void ust__admin_answer(ust__conn *c, int keep_alive)
{
    ust__server *s = c->srv;
    char path[UST__MAX_TARGET + 1];
    ust_request_path(&c->rp.req, path, sizeof(path));
    const char *json = "application/json";
    if (strcmp(path, "/healthz") != 0 && strcmp(path, "/readyz") != 0 &&
        strcmp(path, "/metrics") != 0) {
        answer_plain(c, 404, json, NULL,
                     "{\"error\":\"the admin listener serves /healthz, /readyz and"
                     " /metrics\"}",
                     keep_alive);
    } else if (c->rp.parser.method != HTTP_GET) {
        answer_plain(c, 405, json, "Allow: GET\r\n", "{\"error\":\"use GET\"}",
                     keep_alive);
    } else if (strcmp(path, "/healthz") == 0) {
        int status;
        char *body = ust__health_render(&s->health, atomic_load(&s->metrics.last_seq),
                                        atomic_load(&s->metrics.runner_seq),
                                        s->o->cfg->health.max_lag_s, &status);
        answer_plain(c, status, json, NULL, body ? body : "{\"status\":\"degraded\"}",
                     keep_alive);
        ust_free(body);
    } else if (strcmp(path, "/readyz") == 0) {
        /* The loop runs once the log, the plugins and both listeners are up. */
        answer_plain(c, s->stopping ? 503 : 200, json, NULL,
                     s->stopping ? "{\"status\":\"stopping\"}"
                                 : "{\"status\":\"ready\"}",
                     keep_alive);
    } else {
        int64_t oldest = ust__health_oldest_undecided_us(
            &s->health, atomic_load(&s->metrics.runner_seq));
        int64_t now = ust_time_wall_us();
        ust__metrics_view v = {
            .cfg = s->o->cfg,
            .connections = s->n_conns,
            .owed_bytes = s->owed,
            .answers_owed = s->n_owed,
            .held_back = s->n_held_back,
            .lag_seconds =
                oldest != 0 && now > oldest ? (double)(now - oldest) / 1e6 : 0,
            .classes = s->following ? &s->classes : NULL,
        };
        char *text = ust__metrics_render(&s->metrics, &v);
        answer_plain(c, 200, "text/plain; version=0.0.4", NULL, text ? text : "",
                     keep_alive);
        ust_free(text);
    }
}
