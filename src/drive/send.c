/* Driving scenarios through a live server over real HTTP with the shared
 * libcurl client (http_client.h): sequential steps on one keep-alive
 * connection, real concurrency for bursts (a client, so a connection, and a
 * thread per copy, released together). */
#include <understudy/alloc.h>
#include <understudy/clock.h>
#include <understudy/drive.h>
#include <understudy/error.h>
#include <understudy/http_client.h>

#include <http_parser.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DRIVE_TIMEOUT_MS 30000 /* a step's whole exchange */

typedef struct endpoint {
    char host[256]; /* the Host header: the URL's host, as before libcurl */
    char *base;     /* scheme and authority: a step's target follows it */
} endpoint;

typedef struct exchange {
    const endpoint *ep;
    ust_http_client *client;
    ust_request req;
    int status; /* -1: no answer */
    double ms;
    char body[256];
    pthread_barrier_t *start;
} exchange;

static int parse_url(const char *url, endpoint *ep, char **err)
{
    struct http_parser_url u;
    http_parser_url_init(&u);
    if (http_parser_parse_url(url, strlen(url), 0, &u) != 0 ||
        !(u.field_set & (1 << UF_HOST)) ||
        u.field_data[UF_HOST].len >= sizeof(ep->host))
        return ust_errf(err, UST_EINVAL, "target \"%s\": expected http://HOST:PORT",
                        url);
    memcpy(ep->host, url + u.field_data[UF_HOST].off, u.field_data[UF_HOST].len);
    ep->host[u.field_data[UF_HOST].len] = '\0';
    /* The URL's own path is not used: each step names its target. */
    size_t end = (u.field_set & (1 << UF_PORT))
                     ? u.field_data[UF_PORT].off + u.field_data[UF_PORT].len
                     : u.field_data[UF_HOST].off + u.field_data[UF_HOST].len;
    if (url[end] == ']') /* an IPv6 host's closing bracket */
        end++;
    ep->base = ust_strndup(url, end);
    return ep->base != NULL ? 0 : UST_ENOMEM;
}

/* One request on the exchange's client; fills status, latency and the
 * body's start. */
static void *exchange_once(void *arg)
{
    exchange *x = arg;
    x->status = -1;
    if (x->start != NULL)
        pthread_barrier_wait(x->start); /* every copy of a burst leaves together */
    ust_header *h = NULL;
    size_t n = 0;
    char *url = ust_sprintf("%s%s", x->ep->base, x->req.target);
    if (url == NULL || ust_http_forward_headers(&x->req, x->ep->host, &h, &n) != 0) {
        ust_free(url);
        return NULL;
    }
    ust_http_call call = {x->req.method,   url, h, n, x->req.body, x->req.body_len,
                          DRIVE_TIMEOUT_MS};
    ust_http_result res;
    double t0 = ((double)ust_time_mono_us() / 1e3);
    if (ust_http_client_send(x->client, &call, &res) == 0 && res.failure == 0) {
        x->status = res.status;
        size_t take =
            res.body_len < sizeof(x->body) - 1 ? res.body_len : sizeof(x->body) - 1;
        if (take > 0)
            memcpy(x->body, res.body, take);
        x->body[take] = '\0';
    }
    x->ms = ((double)ust_time_mono_us() / 1e3) - t0;
    ust_http_result_clear(&res);
    ust_free(h);
    ust_free(url);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void tally(ust_drive_summary *sum, double **lat, size_t *cap, const exchange *x)
{
    sum->sent++;
    if (x->status < 0)
        sum->errors++;
    else if (x->status < 300)
        sum->s2xx++;
    else if (x->status < 500)
        sum->s4xx++;
    else
        sum->s5xx++;
    if ((size_t)sum->sent > *cap) {
        *cap = *cap ? *cap * 2 : 256;
        *lat = ust_realloc(*lat, *cap * sizeof(double));
    }
    if (*lat)
        (*lat)[sum->sent - 1] = x->ms;
}

int ust_scenario_drive(ust_scenario *const *sc, size_t n, const char *url, double speed,
                       FILE *out, ust_drive_summary *sum, char **err)
{
    memset(sum, 0, sizeof(*sum));
    endpoint ep = {.base = NULL};
    ust_http_client *seq_client = NULL; /* the sequential steps' connection */
    int rc = parse_url(url, &ep, err);
    if (rc == 0)
        rc = ust_http_client_new(&seq_client, err);
    double *lat = NULL;
    size_t cap = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const ust_scenario *s = sc[i];
        double start = ((double)ust_time_mono_us() / 1e3);
        for (size_t j = 0; rc == 0 && j < s->n_steps; j++) {
            const ust_step *st = &s->steps[j];
            double due = start + st->at_s * 1e3 / speed,
                   now = ((double)ust_time_mono_us() / 1e3);
            if (due > now)
                usleep((useconds_t)((due - now) * 1e3));
            int k = st->copies;
            exchange *xs = ust_calloc((size_t)k, sizeof(*xs));
            pthread_t *th = ust_calloc((size_t)k, sizeof(*th));
            pthread_barrier_t barrier;
            if (xs == NULL || th == NULL) {
                ust_free(xs);
                ust_free(th);
                rc = UST_ENOMEM;
                break;
            }
            if (k > 1)
                pthread_barrier_init(&barrier, NULL, (unsigned)k);
            int64_t at = ust_time_wall_us();
            for (int c = 0; rc == 0 && c < k; c++) {
                xs[c].ep = &ep;
                xs[c].start = k > 1 ? &barrier : NULL;
                xs[c].client = seq_client;
                if (k > 1) /* a connection per copy: they overlap for real */
                    rc = ust_http_client_new(&xs[c].client, err);
                if (rc == 0)
                    rc = ust_step_render(st, at, &xs[c].req, err);
            }
            for (int c = 0; rc == 0 && c < k; c++)
                if (k == 1)
                    exchange_once(&xs[c]);
                else
                    pthread_create(&th[c], NULL, exchange_once, &xs[c]);
            for (int c = 0; rc == 0 && k > 1 && c < k; c++)
                pthread_join(th[c], NULL);
            for (int c = 0; rc == 0 && c < k; c++) {
                fprintf(out, "%-28s step %2zu", s->name, j);
                if (k > 1)
                    fprintf(out, " copy %2d", c);
                fprintf(out, "  %3d  %7.2f ms  %s\n", xs[c].status, xs[c].ms,
                        xs[c].body);
                tally(sum, &lat, &cap, &xs[c]);
            }
            for (int c = 0; c < k; c++) {
                ust_request_clear(&xs[c].req);
                if (xs[c].client != seq_client)
                    ust_http_client_free(xs[c].client);
            }
            if (k > 1)
                pthread_barrier_destroy(&barrier);
            ust_free(xs);
            ust_free(th);
        }
    }
    if (lat != NULL && sum->sent > 0) {
        qsort(lat, (size_t)sum->sent, sizeof(double), cmp_double);
        sum->latency_p50_ms = lat[(sum->sent - 1) / 2];
        sum->latency_p99_ms = lat[(size_t)((double)(sum->sent - 1) * 0.99)];
        sum->latency_max_ms = lat[sum->sent - 1];
    }
    ust_free(lat);
    ust_http_client_free(seq_client);
    ust_free(ep.base);
    if (rc == 0)
        fprintf(
            out,
            "sent %ld: 2xx %ld, 4xx %ld, 5xx %ld, errors %ld; latency p50 %.2f ms, p99"
            " %.2f ms, max %.2f ms\n",
            sum->sent, sum->s2xx, sum->s4xx, sum->s5xx, sum->errors,
            sum->latency_p50_ms, sum->latency_p99_ms, sum->latency_max_ms);
    return rc;
}
