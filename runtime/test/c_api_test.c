/*===- c_api_test.c - The runtime header used from C ---------------------===*\
|*                                                                          *|
|* Compiled as C11: checks that triax_rt.h is valid C and that the library  *|
|* links and works from a C main (memory, loader over an embedded corpus,   *|
|* safetensors round trip, lr schedule, args).                              *|
|*                                                                          *|
|* Usage: triax-rt-c-api-test                                               *|
\*===----------------------------------------------------------------------===*/

#include "triax_rt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int checks = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    ++checks;                                                                  \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* An embedded corpus: header + 33 tokens 0..32. */
static uint8_t corpus[1024 + 2 * 33];

int main(void) {
  char err[256];

  float *w = (float *)trx_alloc(16 * sizeof(float), TRX_MEM_PARAMS);
  CHECK(w != NULL && ((uintptr_t)w % 64) == 0);
  CHECK(trx_mem_current(TRX_MEM_PARAMS) == 16 * sizeof(float));
  for (int i = 0; i < 16; ++i)
    w[i] = (float)i * 0.5f;

  int32_t header[3] = {20240520, 1, 33};
  memcpy(corpus, header, sizeof(header));
  for (int i = 0; i < 33; ++i) {
    corpus[1024 + 2 * i] = (uint8_t)i;
    corpus[1024 + 2 * i + 1] = 0;
  }
  trx_loader *l = trx_loader_open_memory(corpus, sizeof(corpus), "corpus", 2, 4,
                                         0, 0, err, sizeof(err));
  CHECK(l != NULL);
  CHECK(trx_loader_num_batches(l) == 4);
  int32_t in[8], tg[8];
  CHECK(trx_loader_next(l, in, tg) == TRX_OK);
  CHECK(in[7] == 7 && tg[7] == 8);
  trx_loader_close(l);

  char path[] = "/tmp/triax-rt-c-api-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  trx_tensor t = {"w", TRX_F32, 2, {4, 4}, w};
  CHECK(trx_safetensors_write(path, 1, &t, NULL, err, sizeof(err)) == TRX_OK);
  trx_safetensors *st = trx_safetensors_open(path, err, sizeof(err));
  CHECK(st != NULL);
  float back[16];
  int64_t shape[2] = {4, 4};
  CHECK(trx_safetensors_read_into(st, "w", TRX_F32, 2, shape, back, err,
                                  sizeof(err)) == TRX_OK);
  CHECK(memcmp(back, w, sizeof(back)) == 0);
  trx_safetensors_close(st);
  unlink(path);

  CHECK(trx_lr_at(0, 10, 1.0f, 2, TRX_LR_COSINE, 0.0f) == 0.5f);

  char prog[] = "train", flag[] = "--steps", value[] = "3";
  char *argv[] = {prog, flag, value, NULL};
  trx_train_args a;
  CHECK(trx_parse_train_args(3, argv, &a, err, sizeof(err)) == TRX_OK);
  CHECK(a.steps == 3);
  CHECK(strcmp(trx_status_str(TRX_ERR_FORMAT), "bad file format") == 0);

  trx_free(w);
  CHECK(trx_mem_current(TRX_MEM_PARAMS) == 0);
  printf("c-api: all %d checks passed\n", checks);
  return 0;
}
