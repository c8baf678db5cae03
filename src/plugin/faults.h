/* What the kinds of plugin share: the counters of their faults and of their
 * children's stderr (faults.c). The kinds themselves are tables of
 * operations (kind.h). */
#ifndef UST_PLUGIN_FAULTS_H
#define UST_PLUGIN_FAULTS_H

#include <understudy/host.h>

/* Counts a fault, or a restart, of the plugin in namespace ns into c, its
 * config's counters (faults.c); c NULL counts nothing. */
void ust__plugin_fault(ust_plugin_counters *c, const char *ns, ust_plugin_fault f);
void ust__plugin_restarted(ust_plugin_counters *c, const char *ns);

/* A child's stderr: lines forwarded and dropped, counted into c, and one
 * line (prefixed, with its newline) passed to c's sink. */
void ust__plugin_stderr_counted(ust_plugin_counters *c, uint64_t forwarded_lines,
                                uint64_t forwarded_bytes, uint64_t dropped_lines,
                                uint64_t dropped_bytes);
void ust__plugin_stderr_emit(ust_plugin_counters *c, const char *text, size_t len);

#endif
