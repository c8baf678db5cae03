/* `log import --format goreplay` on one input: the bytes are a GoReplay
 * file read by ust__goreplay_parse (payloads split on the separator, the
 * header lines, http-parser on each raw message, responses matched to their
 * requests by id), the parser ust_log_import_capture runs before it derives
 * and appends. Invariants (fuzz_capture.h): a file is read whole or refused
 * naming it; each request read is one the log and a url plugin can carry,
 * with at most one answer of an HTTP status. */
#include "fuzz_capture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ust__capture c;
    char *err = NULL;
    int rc = ust__goreplay_parse((const char *)data, size, "fuzz.gor", &c, &err);
    fuzz_check_capture(rc, &c, err, "fuzz.gor");
    return 0;
}
