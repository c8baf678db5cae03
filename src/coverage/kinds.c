/* The kinds of coverage by name, and the scenario that exercises each. */
#include <understudy/coverage.h>
#include <understudy/error.h>

#include <string.h>

#define NAME(kind, scenario) #kind,
static const char *const names[UST_COVERAGE_N] = {UST_COVERAGE_KINDS(NAME)};
#undef NAME

#define SCENARIO(kind, scenario) "scenarios/" scenario,
static const char *const scenarios[UST_COVERAGE_N] = {UST_COVERAGE_KINDS(SCENARIO)};
#undef SCENARIO

#define LISTED(kind, scenario) ", " #kind
static const char listed[] = UST_COVERAGE_KINDS(LISTED);
#undef LISTED

const char *ust_coverage_kind_name(ust_coverage_kind k)
{
    return (unsigned)k < UST_COVERAGE_N ? names[k] : NULL;
}

const char *ust_coverage_kind_scenario(ust_coverage_kind k)
{
    return (unsigned)k < UST_COVERAGE_N ? scenarios[k] : NULL;
}

int ust_coverage_kind_parse(const char *name, ust_coverage_kind *out)
{
    for (int k = 0; name != NULL && k < UST_COVERAGE_N; k++)
        if (strcmp(names[k], name) == 0) {
            *out = (ust_coverage_kind)k;
            return 0;
        }
    return UST_EINVAL;
}

const char *ust_coverage_kind_list(void)
{
    return listed + 2; /* past the first ", " */
}
