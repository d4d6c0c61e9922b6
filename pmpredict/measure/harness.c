/* pmpredict measurement harness (template; codegen.py declares the kernel table before it,
 * and defines it, with the kernels and their memory layouts, in a file of its own).
 *
 * Times loops of x86-64 instructions with clock_gettime(CLOCK_MONOTONIC) and converts
 * nanoseconds to core cycles with calibration loops of dependent register-register adds
 * (`add %rbx, %rax`: one cycle each on every x86 core; add-immediate chains are folded at
 * rename on Golden Cove and later, so they must not be used) and of dependent `paddq`
 * (one cycle each too, on the vector unit); the faster of the two counts.
 *
 * Every sample of a kernel is a calibration run, a run of n and a run of 2n iterations,
 * back to back: calibration and measurement see the same machine. The fastest of each
 * counts, taken independently (dividing each run by its own sample's calibration was
 * tried: a calibration slowed by a disturbance then makes its sample's kernel look fast,
 * and the minimum over samples picks exactly that one; a loop measured 0.88 cycles an
 * iteration, below the 1.0 a taken branch costs) (interrupts, a busy sibling or a hypervisor only ever add time), and samples are
 * taken until the two fastest of each kind agree (the minimum is confirmed, not a lone
 * lucky run) or the sample budget is spent. The kernels of one run take their samples in
 * turns, so each kernel's samples are spread over the whole run. A run during which the
 * scheduler switched this thread out is thrown away and repeated.
 *
 * A SIGILL / SIGSEGV / SIGBUS / SIGFPE or a hang (SIGALRM) inside a kernel is caught, the
 * kernel is reported as failed and the run goes on. Block kernels (pmpredict measure FILE.s)
 * get the memory regions their layout lists (mapped at fixed addresses, filled, pointer
 * slots set) and, as in BHive, a SIGSEGV on any other unmapped address maps a shared
 * physical page there and retries: one page per region's window (so streams through
 * different registers never share physical memory), one more for everything else.
 *
 * Protocol on stdout, one flushed line per event:
 *   C <ghz> <canary_ipc>                      calibration at start; the canary's adds per
 *                                             cycle when the core was quietest
 *   (the kernel about to take a sample is written, as an int32, to the file named by the
 *    environment variable PM_CURRENT_KERNEL, mapped shared: -1 before the first)
 *   R <kernel> <steady> <short> <long> <spread> <n> <ghz> <dirty> <samples> <confirmed>
 *     <contended> <busy>
 *        cycles per loop iteration (steady, short, long); spread: (median - min) / min of
 *        the long runs; dirty: runs kept although every attempt was interrupted;
 *        confirmed: the minima were reproduced before the sample budget ran out;
 *        contended: samples thrown away and taken again because the canary ran slow;
 *        busy: samples kept although the canary ran slow (the budget for retakes was spent)
 *
 * The canary: a busy sibling hardware thread (another guest on the same physical core)
 * competes for the execution ports. A dependent chain (the calibration) hardly notices; a
 * throughput-bound kernel does. So next to every sample a throughput-bound canary (8
 * independent add chains, more adds than any core has ALUs) runs, and its time relative to
 * the calibration chain's is compared with the quietest seen: a sample whose canary ran
 * CANARY_SLOWER slower was taken on a shared core and is taken again.
 *   F <kernel> <reason>                       kernel failed (signal name, timeout, pages, layout)
 * Arguments: target_ns samples max_samples cpu(-1: stay) alarm_s cal_ns canary_ns canary_slower
 *            quiet_wait_ns canary_reference quiet_phase_ns [kernel indices...] (none: all; -1 alone:
 *            calibrate, print the C line and exit)
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
#include <fcntl.h>

#define CAL_ADDS 100
/* one calibration run (cal_ns, an argument): the call and the clock reads (some 50 ns) stay
   below 0.5% of it at 10 us; the fastest of the samples counts, so the clock is read as
   precisely as the minimum allows, and a shorter run is less often hit by an interrupt */
static double cal_ns = 1e4, canary_ns = 1e4;
#define MAX_SAMPLES 64
/* the two fastest runs of a kind agree this closely: their minimum is reproducible */
#define CONFIRM 0.005

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

/* The canary: 96 adds in 8 independent chains of 12, throughput-bound on every x86-64 core
   (at most 5 integer ALUs, so at least 19 cycles an iteration against a chain of 12). */
__asm__(
    ".text\n"
    ".p2align 6\n"
    ".globl pm_canary\n"
    ".type pm_canary, @function\n"
    "pm_canary:\n"
    "  push %rbx\n"
    "  mov $1, %ebx\n"
    "  .p2align 6\n"
    "1:\n"
    "  .rept 12\n"
    "  add %rbx, %rax\n"
    "  add %rbx, %rcx\n"
    "  add %rbx, %rdx\n"
    "  add %rbx, %rdi\n"
    "  add %rbx, %r8\n"
    "  add %rbx, %r9\n"
    "  add %rbx, %r10\n"
    "  add %rbx, %r11\n"
    "  .endr\n"
    "  dec %rsi\n"
    "  jnz 1b\n"
    "  pop %rbx\n"
    "  ret\n"
    ".size pm_canary, .-pm_canary\n");
void pm_canary(char *base, long iters);
#define CANARY_ADDS 96
/* a canary this much slower (relative to the calibration chain) than the quietest: shared.
   Quiet, the canary repeats within 1-2% (Zen 4: 4.0 adds a cycle, 400 runs); a busy sibling
   slows it by 10-70%. An argument (canary_slower). */
static double canary_slower = 0.05;

/* The same on the vector unit: 100 dependent paddq (latency 1 on every x86-64 core). A busy
   sibling thread (another guest on the same physical core) competes for the integer ALUs
   and can slow the add chain for a whole run; the faster of the two references counts. */
__asm__(
    ".text\n"
    ".p2align 6\n"
    ".globl pm_calibrate_vector\n"
    ".type pm_calibrate_vector, @function\n"
    "pm_calibrate_vector:\n"
    "  pxor %xmm0, %xmm0\n"
    "  pcmpeqd %xmm1, %xmm1\n"
    "  .p2align 6\n"
    "1:\n"
    "  .rept 100\n"
    "  paddq %xmm1, %xmm0\n"
    "  .endr\n"
    "  dec %rsi\n"
    "  jnz 1b\n"
    "  ret\n"
    ".size pm_calibrate_vector, .-pm_calibrate_vector\n");
void pm_calibrate_vector(char *base, long iters);

static volatile int32_t *current_kernel = 0;   /* shared with the parent: the running kernel */
static sigjmp_buf jump_back;
static volatile sig_atomic_t armed = 0;
static const struct pm_kernel *volatile map_on_fault = 0;  /* block kernel running */
static int page_fd = -1;   /* pages shown on demand: 0 elsewhere, r + 1 in region r's window */
/* each page mapped on demand is its own mapping; stay well below vm.max_map_count (65530) */
#define PM_MAX_PAGES 60000
static uintptr_t mapped[PM_MAX_PAGES];   /* pages mapped on demand for the current kernel */
static volatile sig_atomic_t mapped_pages = 0;
static volatile sig_atomic_t page_limit_hit = 0;

/* which page of page_fd an address outside every region shows */
static off_t backing_page(const struct pm_kernel *k, uintptr_t addr) {
    for (int r = 0; r < k->nregions; r++) {
        const struct pm_region *g = &k->regions[r];
        if (g->win_bytes && addr - g->win_start < g->win_bytes) return (off_t)(r + 1) * 4096;
    }
    return 0;
}

static void on_signal(int sig, siginfo_t *info, void *ctx) {
    (void)ctx;
    const struct pm_kernel *k = map_on_fault;
    if (sig == SIGSEGV && k && page_fd >= 0 && info->si_code == SEGV_MAPERR) {
        uintptr_t addr = (uintptr_t)info->si_addr & ~(uintptr_t)4095;
        if (mapped_pages >= PM_MAX_PAGES) {
            page_limit_hit = 1;
        } else if (addr >= 65536 && addr < ((uintptr_t)1 << 47) - 4096) {
            void *p = mmap((void *)addr, 4096, PROT_READ | PROT_WRITE,
                           MAP_SHARED | MAP_FIXED_NOREPLACE, page_fd, backing_page(k, addr));
            if (p == (void *)addr) {
                mapped[mapped_pages] = addr;
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

static long dirty_accepted = 0;  /* runs kept although every attempt was switched out */

/* One timed run that the scheduler did not interrupt: a run during which this thread was
   switched out is thrown away and repeated (a few times at most, then the last one counts
   and is flagged: the minimum over samples still guards against it). */
static double timed(kernel_fn fn, char *base, long n) {
    double t = 0;
    for (int attempt = 0; attempt < 12; attempt++) {
        long before = switches();
        double t0 = now_ns();
        fn(base, n);
        t = now_ns() - t0;
        if (switches() == before) return t;
    }
    dirty_accepted++;
    return t;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* sorts v */
static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double minimum(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] < m) m = v[i];
    return m;
}

/* the two smallest values of v agree within CONFIRM */
static int confirmed(const double *v, int n) {
    if (n < 2) return 0;
    double a = 1e300, b = 1e300;
    for (int i = 0; i < n; i++) {
        if (v[i] < a) { b = a; a = v[i]; }
        else if (v[i] < b) b = v[i];
    }
    return b <= a * (1 + CONFIRM);
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

static long cal_iters, canary_iters;
static double canary_quiet = 1e300;
/* The quiet reference is the fastest canary that two more confirm within CANARY_AGREE: quiet
   readings repeat within a percent (20,000 on an Intel Xeon guest: 0.2114-0.2132 from the 10th
   to the 90th percentile) and glitches scatter below them (0.14-0.20 there, a few in 20,000
   beside a busy vCPU, both calibrations around a canary slowed); the second-fastest alone fell
   8% low in a long process, and every sample after was contended. Until three agree, the
   second fastest; never slower than the quiet rate remembered for this CPU (canary_floor).
   The LOWEST fastest readings are kept, sorted. */
#define LOWEST 16
#define CANARY_AGREE 0.01
static double lowest[LOWEST];
static int n_lowest = 0;
static double canary_floor = 0;     /* the quiet rate remembered for this CPU (an argument) */
static void note_canary(double ratio) {
    if (n_lowest == LOWEST && ratio >= lowest[LOWEST - 1]) return;
    int i = n_lowest < LOWEST ? n_lowest++ : LOWEST - 1;
    while (i > 0 && lowest[i - 1] > ratio) { lowest[i] = lowest[i - 1]; i--; }
    lowest[i] = ratio;
    double quiet = n_lowest > 1 ? lowest[1] : lowest[0];
    for (int j = 0; j + 2 < n_lowest; j++)
        if (lowest[j + 2] <= lowest[j] * (1 + CANARY_AGREE)) { quiet = lowest[j]; break; }
    canary_quiet = canary_floor > 0 && canary_floor < quiet ? canary_floor : quiet;
}
static double ns_per_cycle_best = 1e300;   /* the fastest calibration run of this process */

/* ns per cycle, one calibration run of each chain: the faster (contention only slows) */
static double calibration_run(char *base) {
    double scalar = timed(pm_calibrate, base, cal_iters);
    double vector = timed(pm_calibrate_vector, base, cal_iters);
    double c = (scalar < vector ? scalar : vector) / ((double)cal_iters * CAL_ADDS);
    if (c < ns_per_cycle_best) ns_per_cycle_best = c;
    return c;
}

/* The canary's time per add over the calibration's: 1 / (adds per cycle). The calibration is
   the faster of the runs just before the canary (*ns_per_cycle) and just after it (left in
   *ns_per_cycle, for the next poll to take as its run before). Both are adjacent because the
   clock steps (an Intel Xeon guest: by up to a tenth every 25-100 ms), and against the
   fastest calibration of the process a canary at a lower step read as a busy sibling; the
   faster of two because an interrupt slows one run by any amount (a canary over it read 0.02
   where 0.21 is quiet, in 126-418 of 20,000 pairs), seldom two in a row, and each low
   reading lowered the quiet reference until no canary reached it (every sample busy). The
   quiet reference is updated. Returns 1 when the canary ran canary_slower slower than the
   quiet reference (the core's other hardware thread is busy). */
static int canary_slow(char *base, double *ns_per_cycle) {
    double canary = timed(pm_canary, base, canary_iters) / ((double)canary_iters * CANARY_ADDS);
    double after = calibration_run(base);
    double ratio = canary / (*ns_per_cycle < after ? *ns_per_cycle : after);
    *ns_per_cycle = after;
    note_canary(ratio);
    return ratio > canary_quiet * (1 + canary_slower);
}

/* The quiet gate: a busy sibling comes and goes in bursts of a few milliseconds (another
   guest on the physical core, or this guest's other vCPU), so before a sample the canary is
   polled (10 us a poll) until it runs quiet, for at most quiet_wait_ns. While the gate keeps
   timing out (a sibling busy for good) the wait halves, down to GATE_FLOOR, so a persistently
   shared core costs a few ms a kernel (24 retakes), not 50; one quiet poll restores it. (Down
   to one poll, the retakes of a kernel passed in a quarter of a millisecond, inside one burst,
   and their samples were kept busy.) After PERSISTENT_NS without a quiet poll the gate polls
   once. 1: quiet. */
#define GATE_FLOOR 2.5e5
static double quiet_wait_ns = 2e6, gate_wait_ns = 2e6;
static long gate_polls = 0;
/* no quiet poll for this long: the sibling is busy for good, and waiting buys nothing (the
   samples are kept busy after their retakes, and the experiment is measured again) */
#define PERSISTENT_NS 5e7
static double last_quiet_ns = -1;
/* Another guest on the physical core can be busy for hundreds of milliseconds at a time, and
   quiet in between (a Zen 3 cloud guest: quiet about a tenth of the time, in phases of 50-250
   ms every second or two; a store ran 0.50 cycles in them and 0.77-0.83 outside, whatever the
   retakes). A sample the gate found no quiet moment for may then wait on for the busy phase to
   end, out of this budget for the whole process (an argument, quiet_phase_ns; 0: never). */
static double phase_left_ns = 0;
static int wait_for_quiet(char *base) {
    double start = now_ns();
    if (last_quiet_ns < 0) last_quiet_ns = start;
    double budget = start - last_quiet_ns > PERSISTENT_NS ? 0 : gate_wait_ns;
    if (budget < phase_left_ns) budget = phase_left_ns;
    double cal = calibration_run(base);
    for (;;) {
        gate_polls++;
        if (!canary_slow(base, &cal)) {
            gate_wait_ns = quiet_wait_ns;
            last_quiet_ns = now_ns();
            phase_left_ns -= last_quiet_ns - start > phase_left_ns ? phase_left_ns
                                                                   : last_quiet_ns - start;
            return 1;
        }
        double waited = now_ns() - start;
        if (waited >= budget) {
            gate_wait_ns = gate_wait_ns / 2 > GATE_FLOOR ? gate_wait_ns / 2 : GATE_FLOOR;
            phase_left_ns -= waited > phase_left_ns ? phase_left_ns : waited;
            return 0;
        }
    }
}

/* ns per cycle at start (reported on the C line): the fastest of `samples` runs */
static double calibrate(char *base, int samples) {
    double v[MAX_SAMPLES];
    if (samples > MAX_SAMPLES) samples = MAX_SAMPLES;
    cal_iters = iterations_for(pm_calibrate, base, cal_ns);
    canary_iters = iterations_for(pm_canary, base, canary_ns);
    /* calibrations and canaries in turn: each canary against the runs beside it */
    v[0] = calibration_run(base);
    for (int s = 1; s < samples; s++) {
        double cal = v[s - 1];
        canary_slow(base, &cal);
        v[s] = cal;
    }
    return minimum(v, samples);
}

/* What is known about one kernel while its samples are being taken. */
struct pm_state {
    long n;                       /* iterations of the short run (0: not sized yet) */
    int samples, finished;
    long dirty;                   /* runs kept although every attempt was interrupted */
    int contended, busy;          /* samples retaken / kept although the canary ran slow */
    double cal[MAX_SAMPLES], run_a[MAX_SAMPLES], run_b[MAX_SAMPLES];
};

/* One sample of a kernel: the quiet gate (canary polls), a calibration run, a run of n and a
   run of 2n iterations, and a canary run after. A sample the gate found no quiet moment for is
   not taken, and one during which the canary ran slow is not kept: it is taken again in a
   later turn, until max_samples of them were thrown away; then it is kept and counted busy. */
static void sample(const struct pm_kernel *k, struct pm_state *st, char *base, double target_ns,
                   int max_samples) {
    long accepted_before = dirty_accepted;
    if (st->n == 0) st->n = iterations_for(k->fn, base, target_ns);
    int s = st->samples;
    int slow = !wait_for_quiet(base);
    if (slow && st->contended < max_samples) {
        st->contended++;            /* not quiet: no use running the kernel now */
        return;
    }
    st->cal[s] = calibration_run(base);
    st->run_a[s] = timed(k->fn, base, st->n) / st->n;
    st->run_b[s] = timed(k->fn, base, 2 * st->n) / (2.0 * st->n);
    double cal = st->cal[s];
    slow |= canary_slow(base, &cal);
    if (slow && st->contended < max_samples) {
        st->contended++;
        return;
    }
    st->busy += slow;
    st->samples = s + 1;
    st->dirty += dirty_accepted - accepted_before;
}

static int minima_confirmed(const struct pm_state *st) {
    return confirmed(st->cal, st->samples) && confirmed(st->run_a, st->samples) &&
           confirmed(st->run_b, st->samples);
}

/* Report a kernel, in cycles per loop iteration (ns divided by the fastest calibration of the
   process so far):
     short = fastest t(n) / n       long = fastest t(2n) / 2n
     steady = 2 * long - short  (= (t(2n) - t(n)) / n: call overhead and warm-up cancel)
     spread = (median - fastest) / fastest of t(2n) / 2n
   Some instruction mixes settle into one of two steady states per run (a divider
   schedule of 4.5 or 5 cycles, say); the minimum then finds the faster one, and
   runner.py falls back from `steady` to `long` when short and long ran in different
   states. */
static void report(const struct pm_kernel *k, struct pm_state *st) {
    int s = st->samples;
    /* the fastest calibration of the process, not only of this kernel's samples: a busy
       sibling can slow every calibration run of one kernel while the kernel's fastest run was
       quiet, which then reads too fast (Zen 5: an FP block 7% below its port bound, a width
       probe 8.44 instructions a cycle on a core eight wide) */
    double c = minimum(st->cal, s), short_ns = minimum(st->run_a, s);
    if (ns_per_cycle_best < c) c = ns_per_cycle_best;
    double long_ns = minimum(st->run_b, s);
    int ok = minima_confirmed(st);
    double spread = (median(st->run_b, s) - long_ns) / long_ns;
    printf("R %d %.6f %.6f %.6f %.6f %ld %.6f %ld %d %d %d %d\n", k->index,
           (2 * long_ns - short_ns) / c, short_ns / c, long_ns / c, spread, st->n, 1.0 / c,
           st->dirty, s, ok, st->contended, st->busy);
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

static void fill_words(uint64_t *p, size_t bytes, uint64_t value) {
    for (size_t i = 0; i < bytes / 8; i++) p[i] = value;
}

/* Map and fill a block kernel's regions and set the page shown on demand. 0: a region
   could not be placed at its address. */
static int set_up_layout(const struct pm_kernel *k) {
    for (int r = 0; r < k->nregions; r++) {
        const struct pm_region *g = &k->regions[r];
        void *p = mmap((void *)g->addr, g->bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p != (void *)g->addr) {
            if (p != MAP_FAILED) munmap(p, g->bytes);
            for (int q = 0; q < r; q++) munmap((void *)k->regions[q].addr, k->regions[q].bytes);
            return 0;
        }
        fill_words(p, g->bytes, g->fill);
        for (int i = 0; i < g->nslots; i++)
            *(uint64_t *)((char *)p + g->slots[2 * i]) = g->slots[2 * i + 1];
    }
    size_t bytes = (size_t)(k->nregions + 1) * 4096;
    if (page_fd >= 0 && ftruncate(page_fd, bytes) == 0) {
        uint64_t *pages = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, page_fd, 0);
        if (pages != MAP_FAILED) {
            fill_words(pages, 4096, k->fault_fill);
            for (int r = 0; r < k->nregions; r++)
                fill_words(pages + (r + 1) * 512, 4096, k->regions[r].fill);
            munmap(pages, bytes);
        }
    }
    return 1;
}

/* Unmap everything set_up_layout and the fault handler mapped: the next kernel starts clean. */
static void tear_down_layout(const struct pm_kernel *k) {
    for (int r = 0; r < k->nregions; r++) munmap((void *)k->regions[r].addr, k->regions[r].bytes);
    for (int i = 0; i < mapped_pages; i++) munmap((void *)mapped[i], 4096);
    mapped_pages = 0;
    page_limit_hit = 0;
}

int main(int argc, char **argv) {
    double target_ns = argc > 1 ? atof(argv[1]) : 1e6;
    int samples = argc > 2 ? atoi(argv[2]) : 5;
    int max_samples = argc > 3 ? atoi(argv[3]) : 4 * samples;
    int cpu = argc > 4 ? atoi(argv[4]) : -1;
    int alarm_s = argc > 5 ? atoi(argv[5]) : 10;
    if (argc > 6 && atof(argv[6]) > 0) cal_ns = atof(argv[6]);
    if (argc > 7 && atof(argv[7]) > 0) canary_ns = atof(argv[7]);
    if (argc > 8 && atof(argv[8]) > 0) canary_slower = atof(argv[8]);
    if (argc > 9 && atof(argv[9]) >= 0) quiet_wait_ns = gate_wait_ns = atof(argv[9]);
    /* the quietest canary another process saw (its C line, as time per add over the
       calibration's): a process started while the sibling is busy for good would otherwise
       take the busy rate for the quiet one and flag nothing */
    double canary_reference = argc > 10 ? atof(argv[10]) : 0;
    if (argc > 11 && atof(argv[11]) > 0) phase_left_ns = atof(argv[11]);
    if (samples < 1) samples = 1;
    if (max_samples < samples) max_samples = samples;
    if (max_samples > MAX_SAMPLES) max_samples = MAX_SAMPLES;   /* the arrays of pm_state */
    if (samples > max_samples) samples = max_samples;

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
    fill_words((uint64_t *)mem, bytes, PM_NORMAL_FILL);
    char *base = mem + 4096;

    page_fd = memfd_create("pmpredict-pages", 0);
    const char *current_path = getenv("PM_CURRENT_KERNEL");
    if (current_path) {
        int fd = open(current_path, O_RDWR);
        if (fd >= 0) {
            void *p = mmap(NULL, sizeof(int32_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (p != MAP_FAILED) current_kernel = p;
            close(fd);
        }
    }

    double ns_per_cycle = calibrate(base, samples < 11 ? 11 : samples);
    if (canary_reference > 0 && canary_reference < canary_quiet) {
        canary_floor = canary_reference;
        canary_quiet = canary_reference;
    }
    printf("C %.6f %.4f\n", 1.0 / ns_per_cycle, 1.0 / canary_quiet);
    fflush(stdout);

    /* The kernels take their samples in turns (round robin): a disturbance lasting a few
       milliseconds (a busy sibling thread, a migrated vCPU) spoils one sample of many
       kernels rather than every sample of one. A kernel is done once it has `samples`
       samples whose minima are confirmed, or `max_samples`. */
    int first = 12, count = argc > first ? argc - first : 0;
    int total = count > 0 ? count : PM_NKERNELS;
    struct pm_state *states = calloc(total > 0 ? total : 1, sizeof *states);
    if (!states) return 3;
    const struct pm_kernel *laid_out = 0;     /* the block kernel whose layout is mapped */
    for (int j = 0; j < total; j++) {
        int i = count > 0 ? atoi(argv[first + j]) : j;
        if (i < 0 || i >= PM_NKERNELS) states[j].finished = 1;
    }
    for (int pending = total; pending > 0;) {
        pending = 0;
        for (int j = 0; j < total; j++) {
            struct pm_state *st = &states[j];
            if (st->finished) continue;
            const struct pm_kernel *k = &PM_KERNELS[count > 0 ? atoi(argv[first + j]) : j];
            /* which kernel runs, for the parent to read should this process die or hang: in
               shared memory, not a line on stdout, which would wake the parent (on the
               other CPU, often this core's sibling) before every sample */
            if (current_kernel) *current_kernel = k->index;
            if (laid_out && (!k->block || k->regions != laid_out->regions)) {
                tear_down_layout(laid_out);
                laid_out = 0;
            }
            if (k->block && !laid_out) {
                if (!set_up_layout(k)) {
                    printf("F %d layout\n", k->index);
                    fflush(stdout);
                    st->finished = 1;
                    continue;
                }
                laid_out = k;
            }
            map_on_fault = k->block ? k : 0;
            int sig = sigsetjmp(jump_back, 1);
            if (sig == 0) {
                armed = 1;
                alarm(alarm_s);
                sample(k, st, base, target_ns, max_samples);
                alarm(0);
                armed = 0;
                if ((st->samples >= samples && minima_confirmed(st)) || st->samples >= max_samples) {
                    report(k, st);
                    st->finished = 1;
                }
            } else {
                alarm(0);
                printf("F %d %s\n", k->index, page_limit_hit ? "pages" : signal_name(sig));
                fflush(stdout);
                st->finished = 1;
                /* the layout may be half torn by the fault: start the next kernel afresh */
                if (laid_out) tear_down_layout(laid_out);
                laid_out = 0;
            }
            map_on_fault = 0;
            pending += !st->finished;
        }
    }
    if (laid_out) tear_down_layout(laid_out);
    return 0;
}
