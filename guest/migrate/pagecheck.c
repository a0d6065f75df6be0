// SPDX-License-Identifier: GPL-2.0
/*
 * pagecheck: the workload of the live-migration check (guest/migrate/l1-migrate.sh).
 *
 * Runs as /init of the L2 guest (or as a normal program).  Threads write
 * whole pages of an RWX buffer (THP where the kernel gives it) and call the
 * "ret" each page starts with, so that the host sees writes and
 * instruction fetches in the same huge pages.  Every page's content is a
 * function of its number and its generation, and the generation of every
 * page is kept in a journal in the guest's own memory.  Every period each
 * thread stops writing and checks all of its pages against the journal: a
 * page whose content does not match is a page the migration lost (a write
 * that the destination never got).  A page is also checked before each
 * write to it, so that the write cannot hide an earlier loss.  Verdicts
 * come in rounds: a verdict line is printed when every thread has finished
 * a full check that it began after the previous line ("checks" counts the
 * rounds), so the second line printed after a switchover speaks for checks
 * that ran wholly on the destination:
 *
 *   pagecheck: verdict ok t=12 checks=3 pages=16384 writes=123456
 *   pagecheck: verdict BAD t=12 ... lost=2 (first: page 77 has gen 5, journal 6)
 *
 * Usage: pagecheck [MiB [threads [period_ms [rate]]]]  (default 64 4 1500 0)
 * rate: page writes per second per thread, 0 for as fast as it goes; a
 * migration converges only when the guest dirties pages slower than the
 * link sends them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define WORDS (PAGE / 8)

static uint8_t *buf;
static uint32_t *journal;	/* generation of each page */
static unsigned long npages, nthreads, period_ms, rate;
static atomic_ulong writes, lost;
static atomic_ulong epoch;	/* verdict lines printed */
static atomic_ulong *done;	/* per thread: epoch + 1 at the start of its last full check */
static pthread_mutex_t first_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long first_page = ~0UL;	/* the first lost page, what it held, what it should */
static uint32_t first_has, first_want;

/*
 * Word 0 of a page is "ret" (0xc3) with the page number and generation in
 * the bytes after it; the other words mix both, so that a page that is
 * stale, or a copy of another page, does not match.
 */
static uint64_t word(unsigned long p, uint32_t gen, unsigned long i)
{
	if (!i)
		return 0xc3 | (uint64_t)(p & 0xffffff) << 8 | (uint64_t)gen << 32;
	return ((uint64_t)p << 32 | gen) ^ (i * 0x9e3779b97f4a7c15ULL);
}

static void fill(unsigned long p, uint32_t gen)
{
	uint64_t *w = (uint64_t *)(buf + p * PAGE);
	unsigned long i;

	for (i = WORDS - 1; i; i--)
		w[i] = word(p, gen, i);
	w[0] = word(p, gen, 0);
}

/* the generation the page holds, or ~0 if it holds no consistent one */
static uint32_t held(unsigned long p)
{
	uint64_t *w = (uint64_t *)(buf + p * PAGE);
	uint32_t gen = w[0] >> 32;
	unsigned long i;

	for (i = 0; i < WORDS; i++)
		if (w[i] != word(p, gen, i))
			return ~0U;
	return gen;
}

/* page p must hold its journal's generation; if not, count it lost (once) */
static void verify(unsigned long p)
{
	uint32_t h = held(p);

	if (h == journal[p])
		return;
	atomic_fetch_add(&lost, 1);
	pthread_mutex_lock(&first_lock);
	if (first_page == ~0UL) {
		first_page = p;
		first_has = h;
		first_want = journal[p];
	}
	pthread_mutex_unlock(&first_lock);
	fill(p, journal[p]);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static uint64_t now_ms(void)
{
	return now_ns() / 1000000;
}

/* with a rate: sleep until the n-th write of a thread that began at t0 is due */
static void pace(uint64_t t0, unsigned long n)
{
	uint64_t due, now;
	struct timespec ts;

	if (!rate)
		return;
	due = t0 + n * (1000000000ULL / rate);
	now = now_ns();
	if (now >= due)
		return;
	ts.tv_sec = (due - now) / 1000000000ULL;
	ts.tv_nsec = (due - now) % 1000000000ULL;
	nanosleep(&ts, NULL);
}

static void *worker(void *arg)
{
	unsigned long t = (unsigned long)arg, mine = (npages - t + nthreads - 1) / nthreads;
	uint64_t x = 0x2545f4914f6cdd1dULL * (t + 1), next = now_ms() + period_ms;
	uint64_t t0 = now_ns();
	unsigned long p, k, e, n = 0;

	for (;;) {
		pace(t0, n++);
		/* a random page of this thread's: new generation, then run it */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p = t + (x % mine) * nthreads;
		verify(p);
		journal[p]++;
		fill(p, journal[p]);
		((void (*)(void))(buf + p * PAGE))();
		atomic_fetch_add(&writes, 1);
		if (now_ms() < next)
			continue;
		e = atomic_load(&epoch) + 1;
		for (k = 0, p = t; k < mine; k++, p += nthreads)
			verify(p);
		atomic_store(&done[t], e);
		next = now_ms() + period_ms;
		/* the pace starts again: no burst to catch up for the check */
		t0 = now_ns();
		n = 0;
	}
	return NULL;
}

static void console(void)
{
	int fd;

	if (getpid() != 1)
		return;
	mkdir("/dev", 0755);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	fd = open("/dev/console", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
}

int main(int argc, char **argv)
{
	unsigned long mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 64;
	unsigned long t;
	uint64_t t0 = now_ms();
	pthread_t th;

	console();
	setvbuf(stdout, NULL, _IOLBF, 0);
	nthreads = argc > 2 ? strtoul(argv[2], NULL, 0) : 4;
	period_ms = argc > 3 ? strtoul(argv[3], NULL, 0) : 1500;
	rate = argc > 4 ? strtoul(argv[4], NULL, 0) : 0;
	npages = mib * 1024 * 1024 / PAGE;
	if (!npages || !nthreads || nthreads > npages || !period_ms) {
		fprintf(stderr, "usage: pagecheck [MiB [threads [period_ms [rate]]]]\n");
		return 2;
	}
	/* 2 MiB aligned, so that THP can back it */
	buf = mmap(NULL, npages * PAGE + (2UL << 20), PROT_READ | PROT_WRITE | PROT_EXEC,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	journal = mmap(NULL, npages * sizeof(*journal), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	done = calloc(nthreads, sizeof(*done));
	if (buf == MAP_FAILED || journal == MAP_FAILED || !done) {
		perror("pagecheck: mmap");
		return 1;
	}
	buf = (uint8_t *)(((uintptr_t)buf + (2UL << 20) - 1) & ~((2UL << 20) - 1));
	madvise(buf, npages * PAGE, MADV_HUGEPAGE);
	for (t = 0; t < npages; t++)
		fill(t, 0);
	printf("pagecheck: start %lu MiB, %lu threads, check every %lu ms, %lu writes/s per thread (0: no limit)\n",
	       mib, nthreads, period_ms, rate);
	for (t = 0; t < nthreads; t++)
		if (pthread_create(&th, NULL, worker, (void *)t)) {
			fprintf(stderr, "pagecheck: pthread_create failed\n");
			return 1;
		}
	for (;;) {
		unsigned long e = atomic_load(&epoch), l, fp;
		uint32_t fh, fw;

		usleep(100 * 1000);
		for (t = 0; t < nthreads; t++)
			if (atomic_load(&done[t]) < e + 1)
				break;
		if (t < nthreads)
			continue;	/* the round is not complete yet */
		l = atomic_load(&lost);
		pthread_mutex_lock(&first_lock);
		fp = first_page;
		fh = first_has;
		fw = first_want;
		pthread_mutex_unlock(&first_lock);
		if (!l)
			printf("pagecheck: verdict ok t=%llu checks=%lu pages=%lu writes=%lu\n",
			       (unsigned long long)(now_ms() - t0) / 1000, e + 1, npages,
			       atomic_load(&writes));
		else
			printf("pagecheck: verdict BAD t=%llu checks=%lu pages=%lu writes=%lu lost=%lu (first: page %lu has gen %d, journal %u)\n",
			       (unsigned long long)(now_ms() - t0) / 1000, e + 1, npages,
			       atomic_load(&writes), l, fp, (int)fh, fw);
		/* out of the serial port before any check counts for the next line */
		fflush(stdout);
		tcdrain(1);
		/* checks that begin from now on count for the next line */
		atomic_store(&epoch, e + 1);
	}
}
