#include "plugin/line.h"

#include <stdlib.h>
#include <string.h>

void ust__line_clear(ust__line *line)
{
    json_decref(line->json);
    json_decref(line->writes);
    ust_decision_clear(&line->decision);
    free(line->text);
    memset(line, 0, sizeof(*line));
}
