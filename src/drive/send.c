/* Driving scenarios through a live server over real HTTP: real sockets,
 * real concurrency for bursts (a connection and a thread per copy, released
 * together), responses read with http-parser. */
#include <understudy/clock.h>
#include <understudy/alloc.h>
#include <understudy/drive.h>
#include <understudy/error.h>

#include <arpa/inet.h>
#include <http_parser.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct endpoint {
    char host[256];
    int port;
} endpoint;

typedef struct exchange {
    const endpoint *ep;
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
    ep->port = (u.field_set & (1 << UF_PORT)) ? u.port : 80;
    return 0;
}

struct response {
    int done;
    exchange *x;
    size_t body_len;
};

static int on_body(http_parser *p, const char *at, size_t n)
{
    struct response *r = p->data;
    size_t room = sizeof(r->x->body) - 1 - r->body_len;
    size_t take = n < room ? n : room;
    memcpy(r->x->body + r->body_len, at, take);
    r->body_len += take;
    r->x->body[r->body_len] = '\0';
    return 0;
}

static int on_complete(http_parser *p)
{
    ((struct response *)p->data)->done = 1;
    return 0;
}

static int connect_to(const endpoint *ep)
{
    char port[16];
    snprintf(port, sizeof(port), "%d", ep->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM},
                    *ai = NULL;
    if (getaddrinfo(ep->host, port, &hints, &ai) != 0)
        return -1;
    int fd = socket(ai->ai_family, ai->ai_socktype, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    if (fd >= 0) {
        struct timeval tv = {30, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    }
    return fd;
}

/* One request, one connection; fills status, latency and the body's start. */
static void *exchange_once(void *arg)
{
    exchange *x = arg;
    x->status = -1;
    int fd = connect_to(x->ep);
    if (x->start != NULL)
        pthread_barrier_wait(x->start); /* every copy of a burst leaves together */
    if (fd < 0)
        return NULL;
    char *head = ust_sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n",
                             x->req.method, x->req.target, x->ep->host);
    size_t cap = strlen(head) + x->req.body_len + 64;
    for (size_t i = 0; i < x->req.n_headers; i++)
        cap += strlen(x->req.headers[i].name) + strlen(x->req.headers[i].value) + 4;
    char *buf = ust_malloc(cap);
    size_t len = 0;
    if (head && buf) {
        len += (size_t)snprintf(buf, cap, "%s", head);
        for (size_t i = 0; i < x->req.n_headers; i++)
            len += (size_t)snprintf(buf + len, cap - len, "%s: %s\r\n",
                                    x->req.headers[i].name, x->req.headers[i].value);
        len += (size_t)snprintf(buf + len, cap - len, "Content-Length: %zu\r\n\r\n",
                                x->req.body_len);
        memcpy(buf + len, x->req.body, x->req.body_len);
        len += x->req.body_len;
    }
    double t0 = ((double)ust_time_mono_us() / 1e3);
    size_t off = 0;
    while (buf && off < len) {
        ssize_t w = send(fd, buf + off, len - off, MSG_NOSIGNAL);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    http_parser parser;
    http_parser_init(&parser, HTTP_RESPONSE);
    struct response resp = {0, x, 0};
    parser.data = &resp;
    http_parser_settings settings;
    memset(&settings, 0, sizeof(settings));
    settings.on_body = on_body;
    settings.on_message_complete = on_complete;
    char in[4096];
    ssize_t n;
    while (!resp.done && (n = recv(fd, in, sizeof(in), 0)) > 0)
        if (http_parser_execute(&parser, &settings, in, (size_t)n) != (size_t)n)
            break;
    if (!resp.done) /* a server closing after its answer ends the message too */
        http_parser_execute(&parser, &settings, NULL, 0);
    if (resp.done)
        x->status = (int)parser.status_code;
    x->ms = ((double)ust_time_mono_us() / 1e3) - t0;
    ust_free(head);
    ust_free(buf);
    close(fd);
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
    endpoint ep;
    int rc = parse_url(url, &ep, err);
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
            for (int c = 0; c < k; c++)
                ust_request_clear(&xs[c].req);
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
    if (rc == 0)
        fprintf(
            out,
            "sent %ld: 2xx %ld, 4xx %ld, 5xx %ld, errors %ld; latency p50 %.2f ms, p99"
            " %.2f ms, max %.2f ms\n",
            sum->sent, sum->s2xx, sum->s4xx, sum->s5xx, sum->errors,
            sum->latency_p50_ms, sum->latency_p99_ms, sum->latency_max_ms);
    return rc;
}
