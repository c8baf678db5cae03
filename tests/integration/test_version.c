/* understudy --version, and the version at the end of every usage: the one
 * CMake's project() declares. */
#include "support.h"

#include <understudy/alloc.h>
#include <understudy/version.h>

/* The VERSION of project(understudy VERSION ...) in the root CMakeLists.txt. */
static char *declared_version(void)
{
    char path[PATH_MAX];
    ust_test_source_path("CMakeLists.txt", path);
    char *text = ust_test_read_file(path);
    const char *at = strstr(text, "project(understudy VERSION ");
    assert_non_null(at);
    at += strlen("project(understudy VERSION ");
    char *v = ust_strndup(at, strcspn(at, " )"));
    free(text);
    return v;
}

static void test_version_is_the_projects(void **state)
{
    (void)state;
    char *v = declared_version();
    assert_string_equal(ust_version(), v);
    char dir[PATH_MAX];
    ust_test_tmpdir(dir);
    char *out = NULL;
    assert_int_equal(ust_test_run_cli(dir, "--version", &out), 0);
    char *want = ust_sprintf("understudy %s\n", v);
    assert_string_equal(out, want);
    free(out);
    /* A command's --help ends with it... */
    assert_int_equal(ust_test_run_cli(dir, "gate --help", &out), 0);
    size_t n = strlen(out), w = strlen(want);
    assert_true(n > w);
    assert_string_equal(out + n - w, want);
    assert_non_null(strstr(out, "usage: understudy gate"));
    free(out);
    /* ...and so does the usage a mistake shows. */
    assert_int_equal(ust_test_run_cli(dir, "log --no-such-flag", &out), 2);
    assert_string_equal(out + strlen(out) - w, want);
    free(out);
    ust_free(want);
    ust_free(v);
    ust_test_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_is_the_projects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
