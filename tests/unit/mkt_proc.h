/* mkt_proc.h - what the multi-process tests share: checks, child processes
 * with deadlines, a listening socket on loopback, clocks.  Header-only (every
 * each tests/unit/ source is its own program).
 */
#ifndef MKT_PROC_H
#define MKT_PROC_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int mkt_failures, mkt_checks;

static void mkt_check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mkt_check(int ok, const char *fmt, ...)
{
	char line[1024];
	size_t n;
	va_list ap;
	mkt_checks++;
	if (!ok)
		mkt_failures++;
	/* one write per line: several processes share stderr */
	n = (size_t)snprintf(line, sizeof line, "%s  [%d] ", ok ? "ok  " : "FAIL", (int)getpid());
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
	va_end(ap);
	n = strlen(line);
	line[n++] = '\n';
	if (write(2, line, n) < 0) {
		/* nothing to do */
	}
}

static int64_t mkt_now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static __attribute__((unused)) void mkt_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* A child runs fn(arg) and exits with its result (exit, so that leak checks
 * run in children too). */
static __attribute__((unused)) pid_t mkt_spawn(int (*fn)(void *), void *arg)
{
	pid_t p;
	fflush(stdout);
	fflush(stderr);
	p = fork();
	if (p == 0) {
		int rc;
		mkt_failures = mkt_checks = 0;   /* the child's own count */
		rc = fn(arg);
		fflush(stderr);
		exit(rc);
	}
	return p;
}

/* Waits for pid until the deadline; kills it past that.  Returns its exit
 * status (0..255), 128+signal if killed by a signal, -1 on timeout. */
static __attribute__((unused)) int mkt_reap(pid_t pid, int64_t deadline)
{
	int st;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (r < 0)
			return -2;
		if (mkt_now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		mkt_sleep_ms(5);
	}
}

/* A TCP socket listening on 127.0.0.1 at a free port. */
static __attribute__((unused)) int mkt_listen(int *port)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 128) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
		perror("mkt_listen");
		exit(2);
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

static int mkt_summary(const char *name)
{
	fprintf(stderr, "%s: %d checks, %d failed\n", name, mkt_checks, mkt_failures);
	return mkt_failures ? 1 : 0;
}

#endif
