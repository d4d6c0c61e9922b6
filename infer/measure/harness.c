/* pmpredict measurement harness (template; codegen.py appends the kernels before it).
 *
 * Times loops of x86-64 instructions with clock_gettime(CLOCK_MONOTONIC) and converts
 * nanoseconds to core cycles with a calibration loop of dependent register-register adds
 * (`add %rbx, %rax`: one cycle each on every x86 core; add-immediate chains are folded at
 * rename on Golden Cove and later, so they must not be used).
 *
 * Steady state: for a kernel running n iterations, t(2n) - t(n) removes call overhead and
 * warm-up (see measure()). A run during which the scheduler switched this thread out is
 * repeated; of the remaining runs the fastest counts (noise only ever adds time).
 *
 * A SIGILL / SIGSEGV / SIGBUS / SIGFPE or a hang (SIGALRM) inside a kernel is caught, the
 * kernel is reported as failed and the run goes on. In block mode (pmpredict measure FILE.s)
 * SIGSEGV on an unmapped address maps one shared physical page there and retries, as BHive
 * does (the page holds the registers' initial value, so loaded pointers stay usable).
 *
 * Protocol on stdout, one flushed line per event:
 *   C <ghz>                                   calibration at start
 *   B <kernel>                                kernel about to run
 *   R <kernel> <steady> <short> <long> <spread> <n> <ghz> <dirty>   cycles per loop iteration;
 *                                             dirty: runs kept although always interrupted
 *   F <kernel> <signal name>                  kernel failed
 * Arguments: target_ns samples cpu(-1: stay) alarm_s [kernel indices...] (none: all)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define CAL_ADDS 100

__asm__(
    ".text\n"
    ".p2align 6\n"
    ".globl pm_calibrate\n"
    ".type pm_calibrate, @function\n"
    "pm_calibrate:\n"
    "  push %rbx\n"
    "  mov $1, %eax\n"
    "  mov $1, %ebx\n"
    "  .p2align 6\n"
    "1:\n"
    "  .rept 100\n"
    "  add %rbx, %rax\n"
    "  .endr\n"
    "  dec %rsi\n"
    "  jnz 1b\n"
    "  pop %rbx\n"
    "  ret\n"
    ".size pm_calibrate, .-pm_calibrate\n");
void pm_calibrate(char *base, long iters);

static sigjmp_buf jump_back;
static volatile sig_atomic_t armed = 0;
static volatile sig_atomic_t map_on_fault = 0;
static volatile sig_atomic_t mapped_pages = 0;
static int page_fd = -1;   /* block mode: every page mapped on demand shows this one page */
/* each page mapped on demand is its own mapping; stay well below vm.max_map_count (65530) */
#define PM_MAX_PAGES 60000
static volatile sig_atomic_t page_limit_hit = 0;

static void on_signal(int sig, siginfo_t *info, void *ctx) {
    (void)ctx;
    if (sig == SIGSEGV && map_on_fault && page_fd >= 0 && info->si_code == SEGV_MAPERR) {
        if (mapped_pages >= PM_MAX_PAGES) page_limit_hit = 1;
    }
    if (sig == SIGSEGV && map_on_fault && page_fd >= 0 && info->si_code == SEGV_MAPERR &&
        mapped_pages < PM_MAX_PAGES) {
        uintptr_t addr = (uintptr_t)info->si_addr & ~(uintptr_t)4095;
        if (addr >= 65536 && addr < ((uintptr_t)1 << 46)) {
            void *p = mmap((void *)addr, 4096, PROT_READ | PROT_WRITE,
                           MAP_SHARED | MAP_FIXED_NOREPLACE, page_fd, 0);
            if (p == (void *)addr) {
                mapped_pages++;
                return;   /* the faulting instruction runs again */
            }
        }
    }
    if (armed) {
        armed = 0;
        siglongjmp(jump_back, sig);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static long switches(void) {
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_nvcsw + u.ru_nivcsw;
}

static long dirty_runs = 0;      /* runs thrown away because the thread was switched out */
static long dirty_accepted = 0;  /* runs kept although every attempt was switched out */

/* One timed run that the scheduler did not interrupt: a run during which this thread was
   switched out is thrown away and repeated (a few times at most, then the last one counts:
   the minimum-based estimate still guards against it). On a machine shared with other
   busy processes this removes most of the noise at its source. */
static double timed(kernel_fn fn, char *base, long n) {
    double t = 0;
    for (int attempt = 0; attempt < 12; attempt++) {
        long before = switches();
        double t0 = now_ns();
        fn(base, n);
        t = now_ns() - t0;
        if (switches() == before) return t;
        dirty_runs++;
    }
    dirty_accepted++;
    return t;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* iterations so that one run of fn takes about target_ns */
static long iterations_for(kernel_fn fn, char *base, double target_ns) {
    long n = 1;
    fn(base, 1);
    for (;;) {
        double t = timed(fn, base, n);
        if (t > target_ns / 8 || n > (1L << 40)) {
            double scaled = (double)n * target_ns / (t > 1 ? t : 1);
            return scaled < 1 ? 1 : (long)scaled;
        }
        n *= 2;
    }
}

static long cal_iters;

/* ns per cycle from `samples` calibration pairs */
static double calibrate(char *base, int samples, double target_ns) {
    double v[64];
    if (samples > 64) samples = 64;
    cal_iters = iterations_for(pm_calibrate, base, target_ns);
    for (int s = 0; s < samples; s++) {
        double a = timed(pm_calibrate, base, cal_iters);
        double b = timed(pm_calibrate, base, 2 * cal_iters);
        v[s] = (b - a) / ((double)cal_iters * CAL_ADDS);
    }
    return median(v, samples);
}

/* Time one kernel. Every sample is a run of n and a run of 2n iterations (each about
   target_ns and twice that). Reported, in cycles per loop iteration:
     short = min over samples of t(n) / n       long = min over samples of t(2n) / 2n
     steady = 2 * long - short  (= (t(2n) - t(n)) / n: call overhead and warm-up cancel)
     spread = median over samples of t(2n) / 2n
   Minima, because everything that disturbs a run (interrupts, a hypervisor) only adds
   time. Some instruction mixes settle into one of two steady states per run (a divider
   schedule of 4.5 or 5 cycles, say); the minimum then finds the faster one, and
   runner.py falls back from `steady` to `long` when short and long ran in different
   states. The cycle is recalibrated right before each kernel (frequency drift). */
static void measure(const struct pm_kernel *k, char *base, double target_ns, int samples,
                    double *ns_per_cycle) {
    double run_a[64], run_b[64];
    long accepted_before = dirty_accepted;
    if (samples > 64) samples = 64;
    long n = iterations_for(k->fn, base, target_ns);
    double short_ns = 1e300, long_ns = 1e300;
    for (int s = 0; s < samples; s++) {
        run_a[s] = timed(k->fn, base, n);
        run_b[s] = timed(k->fn, base, 2 * n);
        if (run_a[s] / n < short_ns) short_ns = run_a[s] / n;
        if (run_b[s] / (2 * n) < long_ns) long_ns = run_b[s] / (2 * n);
    }
    for (int s = 0; s < samples; s++) run_b[s] /= 2.0 * n;
    double spread_ns = median(run_b, samples);
    /* calibration right after the kernel: min of three runs (noise only adds time) */
    double cal = 1e300;
    for (int s = 0; s < 3; s++) {
        double t = timed(pm_calibrate, base, cal_iters) / ((double)cal_iters * CAL_ADDS);
        if (t < cal) cal = t;
    }
    /* a calibration more than 3% off the running value is a disturbance unless it repeats */
    if (cal > 0 && cal < *ns_per_cycle * 1.03 && cal > *ns_per_cycle * 0.97)
        *ns_per_cycle = 0.8 * *ns_per_cycle + 0.2 * cal;
    else if (cal > 0)
        *ns_per_cycle = 0.5 * *ns_per_cycle + 0.5 * cal;
    double c = *ns_per_cycle;
    printf("R %d %.6f %.6f %.6f %.6f %ld %.6f %ld\n", k->index, (2 * long_ns - short_ns) / c,
           short_ns / c, long_ns / c, spread_ns / c, n, 1.0 / c, dirty_accepted - accepted_before);
    fflush(stdout);
}

static const char *signal_name(int sig) {
    switch (sig) {
    case SIGILL: return "SIGILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGALRM: return "timeout";
    default: return "signal";
    }
}

int main(int argc, char **argv) {
    double target_ns = argc > 1 ? atof(argv[1]) : 1e6;
    int samples = argc > 2 ? atoi(argv[2]) : 7;
    int cpu = argc > 3 ? atoi(argv[3]) : -1;
    int alarm_s = argc > 4 ? atoi(argv[4]) : 10;
    if (samples < 1) samples = 1;

    if (cpu < 0) cpu = sched_getcpu();
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        sched_setaffinity(0, sizeof set, &set);   /* best effort: measuring still works unpinned */
    }

    static char altstack[1 << 16];
    stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGILL, SIGSEGV, SIGBUS, SIGFPE, SIGALRM};
    for (unsigned i = 0; i < sizeof sigs / sizeof *sigs; i++) sigaction(sigs[i], &sa, NULL);

    /* scratch memory: 1.0f in every 32-bit lane (a normal number for float and double
       views, so no floating-point assists); the kernel gets the middle of it */
    size_t bytes = PM_SCRATCH_BYTES * 2 + 2 * 4096;
    char *mem = aligned_alloc(4096, bytes);
    if (!mem) return 3;
    for (size_t i = 0; i < bytes / 4; i++) ((float *)mem)[i] = 1.0f;
    char *base = mem + 4096;

    /* block mode: one physical page (BHive): it holds the registers' initial value, so a
       pointer loaded from it points at mapped-on-demand memory again */
    page_fd = memfd_create("pmpredict-page", 0);
    if (page_fd >= 0 && ftruncate(page_fd, 4096) == 0) {
        uint64_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, page_fd, 0);
        if (page != MAP_FAILED) {
            for (int i = 0; i < 512; i++) page[i] = PM_BLOCK_INIT;
            munmap(page, 4096);
        }
    } else {
        page_fd = -1;
    }

    double ns_per_cycle = calibrate(base, samples < 11 ? 11 : samples, target_ns);
    printf("C %.6f\n", 1.0 / ns_per_cycle);
    fflush(stdout);

    int first = 5, count = argc - first;
    int total = count > 0 ? count : PM_NKERNELS;
    for (int j = 0; j < total; j++) {
        int i = count > 0 ? atoi(argv[first + j]) : j;
        if (i < 0 || i >= PM_NKERNELS) continue;
        const struct pm_kernel *k = &PM_KERNELS[i];
        printf("B %d\n", k->index);
        fflush(stdout);
        map_on_fault = k->block;
        int sig = sigsetjmp(jump_back, 1);
        if (sig == 0) {
            armed = 1;
            alarm(alarm_s);
            measure(k, base, target_ns, samples, &ns_per_cycle);
            alarm(0);
            armed = 0;
        } else {
            alarm(0);
            printf("F %d %s\n", k->index, page_limit_hit ? "pages" : signal_name(sig));
            fflush(stdout);
        }
        map_on_fault = 0;
    }
    return 0;
}
