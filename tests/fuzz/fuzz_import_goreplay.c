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
    return fuzz_capture_one(ust__goreplay_parse, data, size, "fuzz.gor");
}
