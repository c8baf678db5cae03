/* src/plugins/examples/service.py started for a test (example_service.h). */
#include "example_service.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

void example_service_start(service *s)
{
    char script[PATH_MAX];
    ust_test_source_path("src/plugins/examples/service.py", script);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    s->pid = fork();
    assert_true(s->pid >= 0);
    if (s->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* none outlives a failed test */
        dup2(fds[1], 1);
        close(fds[0]);
        execlp("python3", "python3", script, "--listen", "127.0.0.1:0", "--db", s->db,
               (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[256] = "";
    s->port = 0;
    if (fgets(line, sizeof(line), f) != NULL && strstr(line, "listening on ") != NULL)
        s->port = atoi(strrchr(line, ':') + 1);
    fclose(f);
    if (s->port == 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        fail_msg("service.py did not start (python3 is needed: make test installs it)");
    }
}

void example_service_stop(service *s, int sig)
{
    kill(s->pid, sig);
    int status = 0;
    assert_int_equal(waitpid(s->pid, &status, 0), s->pid);
    s->pid = 0;
}
