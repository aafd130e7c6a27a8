/* parfor.c - see parfor.h. */
#include <pthread.h>
#include <unistd.h>

#include "parfor.h"

enum { PARFOR_MAX = 32 };

typedef struct {
	parfor_fn *fn;
	void *arg;
	size_t lo, hi;
} parfor_job;

static void *parfor_thread(void *p)
{
	parfor_job *j = p;
	j->fn(j->arg, j->lo, j->hi);
	return NULL;
}

void parfor(size_t n, size_t grain, parfor_fn *fn, void *arg)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t k = grain ? n / grain : n;
	if (cpus < 1)
		cpus = 1;
	if (k > (size_t)cpus)
		k = (size_t)cpus;
	if (k > PARFOR_MAX)
		k = PARFOR_MAX;
	if (k < 2) {
		if (n)
			fn(arg, 0, n);
		return;
	}
	parfor_job job[PARFOR_MAX];
	pthread_t th[PARFOR_MAX];
	int started[PARFOR_MAX];
	for (size_t i = 0; i < k; i++) {
		job[i] = (parfor_job){fn, arg, n / k * i, i + 1 == k ? n : n / k * (i + 1)};
		started[i] = i > 0 && pthread_create(&th[i], NULL, parfor_thread, &job[i]) == 0;
	}
	for (size_t i = 0; i < k; i++)
		if (!started[i])
			parfor_thread(&job[i]);
	for (size_t i = 1; i < k; i++)
		if (started[i])
			pthread_join(th[i], NULL);
}
