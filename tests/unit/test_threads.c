/* test_threads.c - compiles on several threads at once make the same code.
 *
 * mk.h allows a context per thread, so the whole front half (compile_run)
 * and the emitter (cg_build up to CUDA) must keep their state per compile.
 * Every sample is compiled to CUDA once on this thread at two meshes; then
 * four threads compile all of them again, each in its own order, several
 * rounds, and every result must equal the serial one byte for byte.  (The
 * lowering once kept its cut scratch in file-level pointers, which two
 * compiles at once overwrote.)  Under the sanitizer build the same run
 * also looks for use of freed or foreign memory.  Exit 0 = pass.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/build.h"
#include "compiler/compile.h"

enum { MAXJOBS = 64, THREADS = 4, ROUNDS = 3 };

typedef struct job {
	char path[300];
	int gpus;
	char *serial;   /* the CUDA made on the main thread */
} job;

static job jobs[MAXJOBS];
static int njobs;
static int failures[THREADS];

/* The CUDA of one job (malloc'd), or NULL when it does not compile. */
static char *cuda_of(const job *j)
{
	srcset src;
	src_init(&src);
	int err, file = src_load(&src, j->path, &err);
	if (file < 0) {
		src_free(&src);
		return NULL;
	}
	arena a;
	arena_init(&a);
	diags d;
	diag_init(&d, &src, &a);
	mk_define defs[] = {{"nodes", 1}, {"gpus", j->gpus}};
	compile_opts o = {.defs = defs, .ndefs = 2, .ranks_per_gpu = 1};
	compile_out out;
	char *cu = NULL;
	if (compile_run(&src, file, &o, PASS_VERIFY, &d, &a, &out) == 0) {
		cg_build_opts bo = {.emit = {.sys_scope = -1}};
		cg_build_out b;
		if (cg_build(out.sched, CG_TO_CUDA, &bo, &b) == CG_OK) {
			cu = b.cuda;
			b.cuda = NULL;
		}
		cg_build_free(&b);
	}
	arena_free(&a);
	src_free(&src);
	return cu;
}

static void *worker(void *arg)
{
	int me = (int)(long)arg;
	for (int round = 0; round < ROUNDS; round++)
		for (int k = 0; k < njobs; k++) {
			const job *j = &jobs[(k * (me + 1) + me + round) % njobs];
			char *cu = cuda_of(j);
			if (!cu || strcmp(cu, j->serial) != 0) {
				fprintf(stderr, "FAIL: thread %d: %s at 1 x %d %s\n", me, j->path, j->gpus,
					cu ? "differs from the serial compile" : "did not compile");
				failures[me]++;
			}
			free(cu);
		}
	return NULL;
}

int main(void)
{
	DIR *dir = opendir("samples");
	if (!dir) {
		fprintf(stderr, "FAIL: no samples/ (run from the repository root)\n");
		return 1;
	}
	struct dirent *e;
	while ((e = readdir(dir)) && njobs + 2 <= MAXJOBS) {
		size_t n = strlen(e->d_name);
		if (n < 4 || strcmp(e->d_name + n - 3, ".mk"))
			continue;
		for (int g = 1; g <= 2; g++) {
			job *j = &jobs[njobs];
			snprintf(j->path, sizeof j->path, "samples/%.255s", e->d_name);
			j->gpus = g;
			if ((j->serial = cuda_of(j)))
				njobs++;
		}
	}
	closedir(dir);
	if (njobs < 8) {
		fprintf(stderr, "FAIL: only %d sample configurations compiled\n", njobs);
		return 1;
	}
	pthread_t th[THREADS];
	for (int t = 0; t < THREADS; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(long)t) != 0) {
			fprintf(stderr, "FAIL: pthread_create\n");
			return 1;
		}
	int bad = 0;
	for (int t = 0; t < THREADS; t++) {
		pthread_join(th[t], NULL);
		bad += failures[t];
	}
	for (int k = 0; k < njobs; k++)
		free(jobs[k].serial);
	printf("test_threads: %d configurations x %d threads x %d rounds, %d failures\n", njobs,
	       THREADS, ROUNDS, bad);
	return bad != 0;
}
