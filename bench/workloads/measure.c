/* Runs one command and prints "<wall seconds> <peak RSS KiB> <exit status> <CPU seconds>"
 * for it (CPU = user + system, the figure a loaded machine disturbs least): the timer and
 * getrusage(RUSAGE_CHILDREN) of compare.sh. LD_PRELOAD is set for the child only,
 * so the allocator under test never runs inside this wrapper. The child's output goes to
 * /dev/null, or to FILE with --stdout (compare.sh checks that every allocator printed the
 * same checksum).
 * Usage: workload_measure [--preload LIB] [--env NAME=VALUE]... [--stdout FILE] -- PROGRAM [ARGS...] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int Usage(const char* self) {
  fprintf(stderr,
          "usage: %s [--preload LIB] [--env NAME=VALUE]... [--stdout FILE] -- PROGRAM [ARGS...]\n",
          self);
  return 2;
}

int main(int argc, char** argv) {
  const char* preload = NULL;
  const char* output = "/dev/null";
  int i = 1;
  for (; i < argc; ++i) {
    if (strcmp(argv[i], "--") == 0) {
      ++i;
      break;
    }
    if (strcmp(argv[i], "--preload") == 0 && i + 1 < argc) {
      preload = argv[++i];
    } else if (strcmp(argv[i], "--stdout") == 0 && i + 1 < argc) {
      output = argv[++i];
    } else if (strcmp(argv[i], "--env") == 0 && i + 1 < argc) {
      if (putenv(argv[++i]) != 0) return Usage(argv[0]);
    } else {
      return Usage(argv[0]);
    }
  }
  if (i >= argc) return Usage(argv[0]);
  const double start = Now();
  const pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    return 1;
  }
  if (pid == 0) {
    if (preload != NULL && setenv("LD_PRELOAD", preload, 1) != 0) _exit(127);
    const int out_fd = open(output, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out_fd < 0) {
      perror(output);
      _exit(127);
    }
    dup2(out_fd, STDOUT_FILENO);
    execvp(argv[i], argv + i);
    perror(argv[i]);
    _exit(127);
  }
  int status = 0;
  struct rusage usage;
  if (wait4(pid, &status, 0, &usage) < 0) {
    perror("wait4");
    return 1;
  }
  const double wall = Now() - start;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  const double cpu = (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                     (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  printf("%.4f %ld %d %.4f\n", wall, usage.ru_maxrss, code, cpu);
  return 0;
}
