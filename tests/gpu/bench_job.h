/* bench_job.h - bench_patterns' job: errors and progress, the ranks and
 * their GPUs, agreement between ranks (barrier, max, broadcast through
 * mk_comm), and launching N local ranks as mkrun -n does.
 * Header-only, for bench_patterns.c alone (each tests/gpu/ source is its
 * own program).
 */
#ifndef MKT_BENCH_JOB_H
#define MKT_BENCH_JOB_H

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "runtime/cudrv.h"
#include "runtime/mk.h"

static const cudrv *cu;  /* the CUDA driver, from main */

/* ---- errors, progress ------------------------------------------------------------ */

static int my_rank;
static double t_start;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bench_patterns: rank %d: ", my_rank);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* progress, rank 0 only, on stderr */
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	if (my_rank != 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "bench_patterns [%6.1fs] ", now_s() - t_start);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

#define CK(call)                                                                          \
	do {                                                                              \
		CUresult r_ = (call);                                                     \
		if (r_ != CUDA_SUCCESS)                                                   \
			die("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudrv_errstr(r_)); \
	} while (0)

/* ---- the job: ranks, GPUs, agreement between ranks -------------------------------- */

typedef struct job {
	mk_comm *comm;        /* NULL: the only rank */
	int rank, world, local_rank, local_size;
	int ndev, dev;        /* GPUs visible here, mine */
	int rpg;              /* ranks on my GPU */
	int shared;           /* some GPU of the job holds several ranks */
} job;

static void job_barrier(job *j)
{
	if (j->comm && mk_comm_barrier(j->comm) != MK_OK)
		die("barrier: a peer rank failed or disappeared");
}

/* every rank gives v; all get the largest */
static int job_max(job *j, int v)
{
	if (!j->comm)
		return v;
	int *all = calloc((size_t)j->world, sizeof *all);
	if (!all || mk_comm_gather_int(j->comm, v, all) != MK_OK)
		die("exchanging results with the other ranks failed");
	int m = all[0];
	for (int r = 1; r < j->world; r++)
		m = all[r] > m ? all[r] : m;
	free(all);
	return m;
}

static double job_max_us(job *j, double us)
{
	double v = us * 100;  /* 10 ns units, capped at 21 s */
	return job_max(j, v > 2e9 ? 2000000000 : (int)v) / 100.0;
}

/* rank 0's n bytes (a multiple of 4) to every rank */
static void job_bcast(job *j, void *buf, size_t n)
{
	for (size_t i = 0; j->comm && i < n / 4; i++) {
		int v = 0, *all = calloc((size_t)j->world, sizeof *all);
		memcpy(&v, (char *)buf + 4 * i, 4);
		if (!all || mk_comm_gather_int(j->comm, j->rank == 0 ? v : 0, all) != MK_OK)
			die("broadcasting from rank 0 failed");
		memcpy((char *)buf + 4 * i, &all[0], 4);
		free(all);
	}
}

static unsigned hash_str(const char *s, unsigned h)
{
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* How many ranks of the job run on my GPU: the ranks whose host name and
 * PCI bus id are mine.  (Launchers may give each rank its own
 * CUDA_VISIBLE_DEVICES, so the local rank count alone does not say.) */
static int ranks_on_my_gpu(job *j)
{
	char host[256] = "", bus[64] = "";
	CUdevice dev;
	gethostname(host, sizeof host - 1);
	CK(cu->cuDeviceGet(&dev, j->dev));
	CK(cu->cuDeviceGetPCIBusId(bus, sizeof bus, dev));
	int key = (int)(hash_str(bus, hash_str(host, 2166136261u)) & 0x7fffffff);
	if (!j->comm)
		return 1;
	int *all = calloc((size_t)j->world, sizeof *all), n = 0;
	if (!all || mk_comm_gather_int(j->comm, key, all) != MK_OK)
		die("exchanging GPU ids failed");
	for (int r = 0; r < j->world; r++)
		n += all[r] == key;
	free(all);
	return n;
}

/* ---- launching the ranks ---------------------------------------------------------------------- */

/* The world size a launcher (-n here, mkrun -n, mpirun, Slurm, torchrun)
 * gave this process, from the variables mkrun reads; 0 when none did. */
static int launcher_world(void)
{
	static const char *const size_vars[] = {"MK_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
						"SLURM_NTASKS", "WORLD_SIZE"};
	for (size_t i = 0; i < sizeof size_vars / sizeof size_vars[0]; i++) {
		const char *v = getenv(size_vars[i]);
		if (v)
			return atoi(v) > 0 ? atoi(v) : 1;
	}
	return 0;
}

static int mps_running(void)
{
	const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
	char path[512];
	snprintf(path, sizeof path, "%s/control", dir ? dir : "/tmp/nvidia-mps");
	return access(path, F_OK) == 0;
}

static pid_t *child_pids;
static int nchild;

/* A signal that ends the launcher ends its ranks too: none is left holding a GPU. */
static void forward_signal(int sig)
{
	for (int r = 0; r < nchild; r++)
		if (child_pids[r] > 0)
			kill(child_pids[r], sig);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* N local ranks, this binary again (as mkrun -n).  When one rank fails the
 * others get 60 s to notice, then are killed: a rank stuck in an NCCL
 * collective with a dead peer never returns. */
static int spawn(int argc, char **argv, int n, int ndev)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof sa;
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl)) {
		fprintf(stderr, "bench_patterns: no local port for the rendezvous: %s\n", strerror(errno));
		return 1;
	}
	int port = ntohs(sa.sin_port);
	close(fd);
	char **args = calloc((size_t)argc + 1, sizeof *args);
	pid_t *pids = calloc((size_t)n, sizeof *pids);
	if (!args || !pids)
		return 1;
	int na = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-n")) {
			i++;
			continue;
		}
		args[na++] = argv[i];
	}
	char token[64];
	snprintf(token, sizeof token, "bench-%d-%ld", (int)getpid(), (long)time(NULL));
	fflush(stdout);
	child_pids = pids;
	nchild = n;
	signal(SIGTERM, forward_signal);
	signal(SIGINT, forward_signal);
	signal(SIGHUP, forward_signal);
	for (int r = 0; r < n; r++) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "bench_patterns: fork: %s\n", strerror(errno));
			return 1;
		}
		if (pid == 0) {
			char v[64];
			snprintf(v, sizeof v, "%d", r);
			setenv("MK_RANK", v, 1);
			setenv("MK_LOCAL_RANK", v, 1);
			snprintf(v, sizeof v, "%d", n);
			setenv("MK_WORLD_SIZE", v, 1);
			setenv("MK_LOCAL_WORLD_SIZE", v, 1);
			snprintf(v, sizeof v, "127.0.0.1:%d", port);
			setenv("MK_ROOT", v, 1);
			setenv("MK_JOB_TOKEN", token, 1);
			setenv("NCCL_NVLS_ENABLE", "0", 1);
			if (n > ndev) {  /* MPS: each rank its share of the SMs */
				snprintf(v, sizeof v, "%d", 100 * ndev / n);
				setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", v, 0);
			}
			execv("/proc/self/exe", args);
			fprintf(stderr, "bench_patterns: exec: %s\n", strerror(errno));
			_exit(127);
		}
		pids[r] = pid;
	}
	int worst = 0, left = n;
	double failed_at = 0;
	while (left > 0) {
		int status = 0;
		pid_t pid = waitpid(-1, &status, failed_at > 0 ? WNOHANG : 0);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			break;
		if (pid == 0) {
			if (now_s() - failed_at > 60) {
				for (int r = 0; r < n; r++)
					if (pids[r] > 0) {
						fprintf(stderr, "bench_patterns: rank %d still running 60 s after a "
							"failure: killed\n", r);
						kill(pids[r], SIGKILL);
					}
				failed_at = now_s() + 1e9;  /* once */
			}
			struct timespec ts = {0, 100000000};
			nanosleep(&ts, NULL);
			continue;
		}
		int r = 0;
		while (r < n && pids[r] != pid)
			r++;
		if (r == n)
			continue;
		pids[r] = 0;
		left--;
		int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (rc) {
			fprintf(stderr, "bench_patterns: rank %d %s %d\n", r,
				WIFEXITED(status) ? "exited with" : "was killed by signal",
				WIFEXITED(status) ? rc : WTERMSIG(status));
			if (failed_at == 0)
				failed_at = now_s();
		}
		if (rc > worst)
			worst = rc;
	}
	free(pids);
	free(args);
	return worst ? 1 : 0;
}

#endif
