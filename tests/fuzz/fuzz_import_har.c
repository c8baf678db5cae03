/* `log import --format har` on one input: the bytes are a HAR file read by
 * ust__har_parse, the parser ust_log_import_capture runs before it derives
 * and appends (derivation and the append are fuzz_import_line's).
 * Invariants (fuzz_capture.h): a HAR is read whole or refused naming the
 * file; what is read is something the log and a url plugin can carry. */
#include "fuzz_capture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_capture_one(ust__har_parse, data, size, "fuzz.har");
}
