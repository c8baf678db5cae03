/* What the kinds of plugin share: the fault counters (faults.c). The kinds
 * themselves are tables of operations (kind.h). */
#ifndef UST_PLUGIN_CHILD_H
#define UST_PLUGIN_CHILD_H

#include <understudy/host.h>

/* Counts a fault, or a restart, of the plugin in namespace ns (faults.c). */
void ust__plugin_fault(const char *ns, ust_plugin_fault f);
void ust__plugin_restarted(const char *ns);

#endif
