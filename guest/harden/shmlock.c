// SPDX-License-Identifier: GPL-2.0
/*
 * shmlock - SHM_LOCK racing reclaim of dirty SysV shared memory, a load of
 * 'lab harden'.
 *
 *   shmlock SECONDS [MB]          (default 64 MB)
 *
 * One writer keeps dirtying every page of a SysV shared memory segment of
 * MB while a second thread locks and unlocks the segment with
 * shmctl(SHM_LOCK/SHM_UNLOCK) every 200 us.  Run it in a memory cgroup
 * whose limit is below MB, with swap, so that reclaim keeps writing the
 * segment's dirty shmem folios to swap while SHM_LOCK makes the mapping
 * unevictable without taking any folio lock.  Reclaim must then keep the
 * folio; shmem_writepage() warns if it is asked to write out a folio of a
 * locked mapping, and the console check of 'lab harden' fails on that.
 *
 * Each pass the writer also checks that every page still holds what it
 * wrote last (the segment is shared memory: nothing may lose a write).
 *
 * Prints "shmlock: P passes, L lock/unlock pairs, M mismatches" and exits
 * 1 on a mismatch, 2 on a setup error.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <time.h>
#include <unistd.h>

static int shmid;
static volatile int stop;
static unsigned long lock_pairs;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *locker(void *arg)
{
	while (!stop) {
		if (shmctl(shmid, SHM_LOCK, NULL))
			break;
		usleep(200);
		shmctl(shmid, SHM_UNLOCK, NULL);
		usleep(200);
		lock_pairs++;
	}
	shmctl(shmid, SHM_UNLOCK, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long mb, pages, pg, passes = 0, mismatches = 0;
	long psz = sysconf(_SC_PAGESIZE);
	double deadline;
	pthread_t thr;
	uint64_t *w;
	char *p;

	if (argc < 2) {
		fprintf(stderr, "usage: shmlock SECONDS [MB]\n");
		return 2;
	}
	deadline = now() + atof(argv[1]);
	mb = argc > 2 ? strtoul(argv[2], NULL, 0) : 64;
	pages = (mb << 20) / psz;

	shmid = shmget(IPC_PRIVATE, mb << 20, IPC_CREAT | 0600);
	if (shmid < 0) {
		perror("shmlock: shmget");
		return 2;
	}
	p = shmat(shmid, NULL, 0);
	/* Removed now, freed at the last detach, also if we are killed. */
	shmctl(shmid, IPC_RMID, NULL);
	if (p == (char *)-1) {
		perror("shmlock: shmat");
		return 2;
	}
	if (pthread_create(&thr, NULL, locker, NULL)) {
		fprintf(stderr, "shmlock: pthread_create failed\n");
		return 2;
	}

	while (now() < deadline) {
		passes++;
		for (pg = 0; pg < pages; pg++) {
			w = (uint64_t *)(p + pg * psz);
			if (passes > 1 && *w != ((passes - 1) << 32 | pg)) {
				if (mismatches++ < 5)
					printf("MISMATCH page %lu: %#llx, want %#llx\n",
					       pg, (unsigned long long)*w,
					       (unsigned long long)((passes - 1) << 32 | pg));
			}
			*w = passes << 32 | pg;
		}
	}
	stop = 1;
	pthread_join(thr, NULL);
	shmdt(p);

	printf("shmlock: %lu passes, %lu lock/unlock pairs, %lu mismatches\n",
	       passes, lock_pairs, mismatches);
	return mismatches ? 1 : 0;
}
