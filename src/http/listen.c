/* The recorder's two listeners: the addresses they take (listen, and
 * admin_listen or its loopback default), binding them, and the name each is
 * bound to. */
#include "http/server.h"

#include <understudy/alloc.h>
#include <understudy/error.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* what names the setting in messages: "listen" or "admin_listen". */
int ust__listen_parse(const char *what, const char *listen,
                      struct sockaddr_storage *addr, char **err)
{
    const char *colon = strrchr(listen, ':');
    if (colon == NULL)
        return ust_errf(err, UST_EINVAL, "%s \"%s\": expected HOST:PORT", what, listen);
    char host[64];
    size_t n = (size_t)(colon - listen);
    if (n == 0 || n >= sizeof(host))
        return ust_errf(err, UST_EINVAL, "%s \"%s\": expected HOST:PORT", what, listen);
    memcpy(host, listen, n);
    host[n] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port < 0 || port > 65535)
        return ust_errf(err, UST_EINVAL, "%s \"%s\": bad port", what, listen);
    if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)addr) != 0 &&
        uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)addr) != 0)
        return ust_errf(err, UST_EINVAL, "%s \"%s\": bad address", what, listen);
    return 0;
}

static int addr_port(const struct sockaddr_storage *a)
{
    return a->ss_family == AF_INET6 ? ntohs(((const struct sockaddr_in6 *)a)->sin6_port)
                                    : ntohs(((const struct sockaddr_in *)a)->sin_port);
}

/* The admin address: as configured, or else loopback on the listen port
 * + 1 (a free one when listen takes a free one), so that it is never
 * reachable from where the callbacks come unless someone says so. */
int ust__listen_admin_address(const ust_serve_opts *o,
                              const struct sockaddr_storage *listen,
                              struct sockaddr_storage *addr, char **err)
{
    if (o->admin_listen != NULL)
        return ust__listen_parse("admin_listen", o->admin_listen, addr, err);
    int port = addr_port(listen);
    if (port == 65535)
        return ust_errf(err, UST_EINVAL,
                        "listen \"%s\": the admin listener takes the next port by"
                        " default, and there is none: set \"admin_listen\" or"
                        " --admin-listen",
                        o->listen);
    return uv_ip4_addr("127.0.0.1", port ? port + 1 : 0, (struct sockaddr_in *)addr) ==
                   0
               ? 0
               : ust_errf(err, UST_EINVAL, "cannot make the admin address");
}

void ust__listen_addr_name(const struct sockaddr_storage *a, char *out, size_t cap)
{
    char host[64] = "?";
    if (a->ss_family == AF_INET6)
        uv_ip6_name((const struct sockaddr_in6 *)a, host, sizeof(host));
    else if (a->ss_family == AF_INET)
        uv_ip4_name((const struct sockaddr_in *)a, host, sizeof(host));
    snprintf(out, cap, "%s:%d", host, addr_port(a));
}

int ust__listen_on(uv_tcp_t *tcp, const struct sockaddr_storage *addr,
                   const char *label, char **err)
{
    int uvrc = uv_tcp_bind(tcp, (const struct sockaddr *)addr, 0);
    if (uvrc == 0)
        uvrc = uv_listen((uv_stream_t *)tcp, 1024, ust__conn_accept);
    if (uvrc == 0)
        return 0;
    char name[80];
    ust__listen_addr_name(addr, name, sizeof(name));
    return ust_errf(err, UST_EIO, "cannot listen on %s (%s): %s", name, label,
                    uv_strerror(uvrc));
}

void ust_serve_bound(ust_server *server, int admin, char *out, size_t cap)
{
    struct sockaddr_storage bound;
    int len = sizeof(bound);
    memset(&bound, 0, sizeof(bound));
    uv_tcp_getsockname(admin ? &server->admin : &server->listener,
                       (struct sockaddr *)&bound, &len);
    ust__listen_addr_name(&bound, out, cap);
}
