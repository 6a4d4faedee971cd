/*===- triax_rt.h - Triax CPU runtime, C ABI --------------------*- C -*-===*\
|*                                                                          *|
|* The one public header of the Triax runtime library (triax_rt). Programs  *|
|* compiled by Triax, and the hand-written training drivers around them,    *|
|* call these functions for memory, data loading, checkpoints, the          *|
|* training-loop helpers (lr schedule, logging, timing) and CLI parsing.    *|
|*                                                                          *|
|* Conventions:                                                             *|
|*  - Every function is extern "C" and safe to call from C (C99 or later).  *|
|*  - Functions that can fail return an int status (TRX_OK == 0, otherwise  *|
|*    a TRX_ERR_* code) or NULL, and write a one-line, NUL-terminated       *|
|*    message naming the file and the problem into (err, errlen). err may   *|
|*    be NULL or errlen 0 when the caller does not want the message; a too  *|
|*    small buffer truncates the message. Messages carry no trailing        *|
|*    newline and no "error:" prefix.                                       *|
|*  - Functions without an err buffer (trx_alloc, trx_free,                 *|
|*    trx_loader_next, ...) record their failure message in a thread-local  *|
|*    buffer read with trx_last_error().                                    *|
|*  - Bad input (NULL pointers, bad sizes, corrupt files) is reported, never *|
|*    a crash or an abort.                                                  *|
|*  - Multi-byte values in files are little-endian; the library requires a  *|
|*    little-endian host.                                                   *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef TRIAX_RT_H
#define TRIAX_RT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "triax_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===*/
/* Status codes                                                             */
/*===----------------------------------------------------------------------===*/

enum trx_status {
  TRX_OK = 0,
  TRX_ERR_ARG = 1,       /* invalid argument (NULL pointer, bad size, flag) */
  TRX_ERR_IO = 2,        /* open/read/write/fsync/rename/mkdir failed */
  TRX_ERR_FORMAT = 3,    /* malformed, corrupt or truncated file */
  TRX_ERR_NOT_FOUND = 4, /* missing tensor, key, file or checkpoint */
  TRX_ERR_MISMATCH = 5,  /* dtype or shape differs from what was expected */
  TRX_ERR_RANGE = 6,     /* value out of range (e.g. token id >= vocab) */
  TRX_ERR_NOMEM = 7      /* out of memory */
};

/* Short name of a status code ("ok", "invalid argument", ...). Never NULL. */
const char *trx_status_str(int status);

/* Message of the last failure of a function that has no err buffer, on the
 * calling thread. Empty string when there is none. Never NULL. */
const char *trx_last_error(void);

/*===----------------------------------------------------------------------===*/
/* Memory                                                                   */
/*===----------------------------------------------------------------------===*/

enum trx_mem_category {
  TRX_MEM_PARAMS,
  TRX_MEM_GRADS,
  TRX_MEM_OPTIM,
  TRX_MEM_ACTIV,
  TRX_MEM_OTHER,
  TRX_MEM_NCAT
};

/* Allocates `bytes` bytes, 64-byte aligned, and charges them to `category`
 * (a trx_mem_category). bytes == 0 returns a valid unique pointer. Returns
 * NULL (message in trx_last_error()) for an invalid category or when out of
 * memory. Thread-safe.
 *
 * Where the block lives: host memory in this (CPU) library; device memory
 * (never managed memory) in libtriax_rt_cuda.a, which replaces the trx_alloc
 * family. The runtime therefore never dereferences a trx_alloc'd block on
 * the host: it moves bytes with trx_copy_to_host, trx_copy_to_device,
 * trx_copy_on_device and trx_device_memset (below), which are memcpy and
 * memset here.
 *
 * Zero fill: blocks of TRX_MEM_PARAMS, TRX_MEM_GRADS, TRX_MEM_OPTIM and
 * TRX_MEM_OTHER (the training state, token buffers, scratch) are zero-filled
 * (on CUDA: once, by the device, in stream order before any later use).
 * TRX_MEM_ACTIV blocks (the compiled code's temporaries, see
 * _mlir_memref_to_llvm_alloc) are NOT zero-filled: the compiled code writes
 * every element before it reads it. On the CPU a freed TRX_MEM_ACTIV block
 * is cached and handed out again for the next allocation of its size (a
 * step after the first takes no fresh pages). To check that on
 * the CPU, the environment variable TRX_ALLOC_POISON=1 (read at every
 * TRX_MEM_ACTIV allocation) fills TRX_MEM_ACTIV blocks with 0xFF bytes
 * instead (a NaN in f32 and bf16, -1 in i32), so that a read before a write
 * shows; the CUDA library honours it too (a cuMemsetD8Async of 0xFF). Other
 * values than "1" (or unset) leave the default. */
void *trx_alloc(size_t bytes, int category);

/* Frees a pointer returned by trx_alloc. NULL is a no-op. A pointer that was
 * not returned by trx_alloc, or was already freed, is detected on a
 * best-effort basis: it is reported on stderr and in trx_last_error() and
 * not freed. Thread-safe. */
void trx_free(void *p);

/* Bytes currently allocated in `cat` (the requested sizes). 0 for an invalid
 * category. */
size_t trx_mem_current(int cat);
/* Highest trx_mem_current(cat) seen since start or trx_mem_reset_peaks(). */
size_t trx_mem_peak(int cat);
/* Bytes currently allocated over all categories. */
size_t trx_mem_current_total(void);
/* Highest total over all categories, tracked at allocation time (so it is
 * the true peak of the sum, not the sum of per-category peaks). */
size_t trx_mem_peak_total(void);
/* Sets every peak (per category and total) to the current value. */
void trx_mem_reset_peaks(void);
/* Bytes zero-filled at allocation in `cat` since start (the requested
 * sizes of the blocks that were zeroed; a poisoned or, on CUDA, an
 * activation block adds nothing). 0 for an invalid category. */
size_t trx_mem_zeroed_bytes(int cat);
/* "params", "grads", "optim", "activ", "other"; "invalid" otherwise. */
const char *trx_mem_category_name(int cat);

/* Writes `bytes` as mebibytes with one decimal, e.g. "123.4 MiB", into buf.
 * Returns buf. */
char *trx_format_mib(size_t bytes, char *buf, size_t len);

/* Waits until the device has finished the work queued so far. A no-op on
 * the CPU (a weak definition); on the CUDA target, whose kernels and GEMMs
 * are asynchronous, libtriax_rt_cuda.a's definition synchronizes the
 * compute and the communication stream. The copies below do what they
 * need themselves; this is for timing and tests. */
void trx_device_sync(void);

/* Host <-> device copies: the only way the runtime reads or writes a
 * trx_alloc'd block (or any buffer of the compiled code) on the host. The
 * CPU library's definitions are weak (memcpy, memmove, memset);
 * libtriax_rt_cuda.a defines them on the CUDA driver API. NULL pointers
 * with bytes > 0 abort with a message; bytes == 0 does nothing (but is
 * counted).
 *
 * trx_copy_to_host: dst is host memory. Returns with the bytes in dst. On
 *   CUDA it first waits for the compute and the communication stream (all
 *   work queued so far, so the copy sees every earlier write), then
 *   copies (cuMemcpy: src may be device memory or, through unified
 *   addressing, host memory). A host synchronization: the driver calls it
 *   only where it needs a value on the host.
 * trx_copy_to_device: src is host memory; it may be reused or freed as soon
 *   as the call returns. On CUDA the copy is queued on the compute stream
 *   (inside a gradient region, on the region's stream, like the compiled
 *   work) after the work queued so far there, without a host wait: src is
 *   first copied into one of a few pinned staging buffers (4 MiB each;
 *   larger copies go through them in pieces), and a staging buffer is
 *   reused only after its previous copy finished (an event). Work on the
 *   other stream that may still use dst must have been joined
 *   (trx_comm_wait_grads); the driver's copies are of buffers no such work
 *   uses.
 * trx_copy_on_device: device to device (the ranges may overlap on the CPU,
 *   not on CUDA), stream-ordered like trx_copy_to_device.
 * trx_device_memset: every byte of [device_dst, device_dst + bytes) becomes
 *   (unsigned char)byte; stream-ordered like trx_copy_to_device
 *   (cuMemsetD8Async), no host wait. */
void trx_copy_to_host(void *dst, const void *device_src, size_t bytes);
void trx_copy_to_device(void *device_dst, const void *src, size_t bytes);
void trx_copy_on_device(void *device_dst, const void *device_src, size_t bytes);
void trx_device_memset(void *device_dst, int byte, size_t bytes);

/* Counters of the four functions above, since start or the last reset:
 * calls and bytes per kind. Atomic; 0 for an invalid kind. */
enum trx_copy_kind {
  TRX_COPY_TO_HOST = 0,
  TRX_COPY_TO_DEVICE = 1,
  TRX_COPY_ON_DEVICE = 2,
  TRX_COPY_MEMSET = 3,
  TRX_COPY_NKINDS = 4
};
uint64_t trx_copy_calls(int kind);
uint64_t trx_copy_bytes(int kind);
void trx_copy_reset_counters(void);

/*===----------------------------------------------------------------------===*/
/* Data loader for llm.c token files (.bin)                                 */
/*===----------------------------------------------------------------------===*/
/* File format: a header of 256 little-endian int32 (header[0] = magic
 * 20240520, header[1] = version 1, header[2] = number of tokens N, the rest
 * unused), then exactly N little-endian uint16 token ids.
 *
 * Batches: every batch has B*T inputs and B*T targets (row-major [B][T]);
 * a batch read at token offset `pos` has inputs = tok[pos : pos+B*T] and
 * targets = tok[pos+1 : pos+B*T+1]. An epoch has
 * trx_loader_num_batches() = floor((N - 1) / (B*T)) batches, the windows at
 * offsets k*B*T for k = 0 .. num_batches-1.
 *
 * Sequential mode (shuffle = 0): batch k of an epoch is window k; when the
 * next window would need pos+B*T+1 > N tokens, the loader wraps to pos = 0
 * and a new epoch starts.
 *
 * Shuffle mode (shuffle != 0): batch k of epoch e is window perm_e[k], where
 * perm_e is drawn with Fisher-Yates from splitmix64:
 *     state = seed ^ (0x9E3779B97F4A7C15 * (e + 1))       (mod 2^64)
 *     perm = [0, 1, ..., nb-1]
 *     for i = nb-1 down to 1:
 *         j = splitmix64_next(&state) % (i + 1); swap(perm[i], perm[j])
 * with splitmix64_next(s): *s += 0x9E3779B97F4A7C15; z = *s;
 *     z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
 *     z = (z ^ (z >> 27)) * 0x94D049BB133111EB; return z ^ (z >> 31).
 * The same seed gives the same order on every machine.
 *
 * State: trx_loader_state() is (epoch << 32) | next_batch_index, where
 * next_batch_index is in [0, num_batches) (the loader wraps right after the
 * last batch of an epoch); trx_loader_set_state() restores it exactly (the
 * permutation of that epoch is regenerated). */

typedef struct trx_loader trx_loader;

/* Opens (memory-maps) a token file. B, T > 0. Returns NULL and writes a
 * message such as "data.bin: bad magic 12345 (expected 20240520)" on
 * failure. */
trx_loader *trx_loader_open(const char *path, int64_t B, int64_t T, int shuffle,
                            uint64_t seed, char *err, size_t errlen);

/* Same, over a whole .bin image already in memory (an embedded corpus). The
 * bytes are not copied: they must stay valid until trx_loader_close(). They
 * need no particular alignment. `name` is used in messages ("<memory>" when
 * NULL). */
trx_loader *trx_loader_open_memory(const uint8_t *bytes, size_t n,
                                   const char *name, int64_t B, int64_t T,
                                   int shuffle, uint64_t seed, char *err,
                                   size_t errlen);

/* Fills inputs[B*T] and targets[B*T] (host memory; the training driver
 * then copies them to its device token buffers) with the next batch and
 * advances.
 * Returns TRX_OK, or TRX_ERR_ARG for NULL arguments (see trx_last_error). */
int trx_loader_next(trx_loader *l, int32_t *inputs, int32_t *targets);

/* Checks that every token id in the file is < vocab. Returns TRX_OK, or
 * TRX_ERR_RANGE with "data.bin: token 50300 at index 17 is out of range for
 * vocab size 50257". */
int trx_loader_check_vocab(const trx_loader *l, int64_t vocab, char *err,
                           size_t errlen);

/* (epoch << 32) | next_batch_index. 0 for NULL. */
uint64_t trx_loader_state(const trx_loader *l);
/* Restores a state from trx_loader_state() of a loader over the same data
 * with the same B, T, shuffle and seed. A batch index equal to num_batches
 * means the start of the next epoch. Returns TRX_ERR_ARG for a state whose
 * batch index exceeds num_batches. */
int trx_loader_set_state(trx_loader *l, uint64_t state, char *err,
                         size_t errlen);
/* Batches per epoch, floor((N - 1) / (B*T)). 0 for NULL. */
int64_t trx_loader_num_batches(const trx_loader *l);
/* Number of tokens N in the file. 0 for NULL. */
int64_t trx_loader_num_tokens(const trx_loader *l);
/* NULL is a no-op. */
void trx_loader_close(trx_loader *l);

/*===----------------------------------------------------------------------===*/
/* Safetensors                                                              */
/*===----------------------------------------------------------------------===*/
/* Format: u64 little-endian header length N; N bytes of UTF-8 JSON
 *   {"__metadata__":{"key":"value",...},
 *    "name":{"dtype":"F32","shape":[d0,d1,...],"data_offsets":[begin,end]},
 *    ...}
 * padded with spaces so that N is a multiple of 8; then the raw tensor data,
 * row-major, little-endian, with offsets relative to the start of the data.
 * Tensor data are contiguous (no gaps) and the writer stores tensors with
 * 4-byte elements before those with 2-byte elements, so every tensor of a
 * file written here is aligned to its element size. */

/* F16 is read (a Hugging Face checkpoint for --init-from, converted to the
 * model's dtype); Triax itself computes in F32 and BF16. */
enum trx_dtype { TRX_F32 = 0, TRX_BF16 = 1, TRX_I32 = 2, TRX_F16 = 3 };

#define TRX_MAX_RANK 8

typedef struct {
  const char *name;
  int32_t dtype; /* enum trx_dtype */
  int32_t rank;  /* 0 .. TRX_MAX_RANK; rank 0 is a scalar (1 element) */
  int64_t shape[TRX_MAX_RANK];
  const void *data;
} trx_tensor;

/* "F32", "BF16", "I32", "F16"; NULL for an unknown dtype. */
const char *trx_dtype_name(int32_t dtype);
/* 4, 2, 4, 2; 0 for an unknown dtype. */
size_t trx_dtype_size(int32_t dtype);
/* Number of elements (product of the shape), -1 for an invalid rank, a
 * negative dimension or overflow. */
int64_t trx_tensor_numel(const trx_tensor *t);

/* Writes n tensors to `path` atomically: the file is written to
 * "<path>.tmp.<pid>", fsynced, renamed over `path`, and the directory is
 * fsynced, so an interrupted write never damages an existing file.
 * metadata_json_object_or_null, if not NULL, must be a JSON object whose
 * values are all strings; it is stored as "__metadata__". */
int trx_safetensors_write(const char *path, int64_t n,
                          const trx_tensor *tensors,
                          const char *metadata_json_object_or_null, char *err,
                          size_t errlen);

typedef struct trx_safetensors trx_safetensors;

/* Opens (memory-maps) and validates a safetensors file: header length and
 * JSON, known dtypes, shapes, offsets inside the file and consistent with the
 * shape. Returns NULL with a message on failure. */
trx_safetensors *trx_safetensors_open(const char *path, char *err,
                                      size_t errlen);
/* Number of tensors (metadata excluded). */
int64_t trx_safetensors_count(const trx_safetensors *st);
/* Describes tensor i (in header order): out->name and out->data point into
 * the open file and stay valid until trx_safetensors_close(). Returns
 * TRX_ERR_NOT_FOUND for i out of range. */
int trx_safetensors_get(const trx_safetensors *st, int64_t i, trx_tensor *out);
/* Same, by name. Returns TRX_ERR_NOT_FOUND if there is no such tensor. */
int trx_safetensors_find(const trx_safetensors *st, const char *name,
                         trx_tensor *out);
/* Copies tensor `name` into dst after checking that it exists and has
 * exactly this dtype and shape. Messages:
 *   "ckpt/model.safetensors: missing tensor 'h.0.attn.q.weight'"
 *   "ckpt/model.safetensors: tensor 'wte.weight' has shape [256, 64],
 *    expected [256, 128]"
 *   "ckpt/model.safetensors: tensor 'x' has dtype BF16, expected F32" */
int trx_safetensors_read_into(const trx_safetensors *st, const char *name,
                              int32_t dtype, int32_t rank, const int64_t *shape,
                              void *dst, char *err, size_t errlen);
/* Reads n tensors: specs[i] gives name, dtype, rank and shape (its data is
 * ignored) and dst[i] the destination. With strict != 0 the file must hold
 * no other tensor ("...: unexpected tensor 'x'"). */
int trx_safetensors_read_tensors(const trx_safetensors *st, int64_t n,
                                 const trx_tensor *specs, void *const *dst,
                                 int strict, char *err, size_t errlen);
/* Value of a "__metadata__" key, NULL if absent. Valid until close. */
const char *trx_safetensors_metadata(const trx_safetensors *st,
                                     const char *key);
/* NULL is a no-op. */
void trx_safetensors_close(trx_safetensors *st);

/*===----------------------------------------------------------------------===*/
/* Checkpoint directories                                                   */
/*===----------------------------------------------------------------------===*/
/* Layout of a checkpoint directory CKPT:
 *   CKPT/step-00000100/model.safetensors  parameters, under their names
 *   CKPT/step-00000100/optim.safetensors  AdamW state, "<name>.exp_avg" and
 *                                         "<name>.exp_avg_sq" (F32, shape of
 *                                         the parameter)
 *   CKPT/step-00000100/state.json         trx_ckpt_state + "extra" strings
 *   CKPT/step-00000100/config.json        (the driver's, for a model with
 *                                         trx_model_desc.hf_config:
 *                                         transformers' GPT-2 config, written
 *                                         with the others)
 *   CKPT/latest                           "step-00000100\n"
 * Writing step S: the files go into CKPT/step-<S>.tmp-<pid>/, each fsynced;
 * the directory is fsynced and renamed to step-<S> (an existing step-<S> is
 * swapped out atomically with renameat2(RENAME_EXCHANGE) and removed); CKPT
 * is fsynced; then "latest" is replaced by temp file + fsync + rename +
 * fsync of CKPT. A process killed at any moment leaves the previous
 * checkpoint loadable. Leftover *.tmp-<pid> entries of processes that no
 * longer run are removed by the next save. One writer per CKPT at a time:
 * the driver takes trx_ckpt_lock first. */

typedef struct {
  int64_t step;          /* optimizer steps completed */
  int64_t total_steps;   /* --steps of the run (lr schedule horizon) */
  uint64_t seed;         /* --seed of the run */
  uint64_t loader_state; /* trx_loader_state() of the training loader */
  uint64_t rng_state;    /* state of the program's own RNG, 0 if none */
  float lr_max;          /* peak learning rate in use */
  float min_lr_ratio;    /* schedule floor, lr_max * min_lr_ratio */
  int64_t warmup;        /* warmup steps */
  int32_t lr_schedule;   /* TRX_LR_CONSTANT or TRX_LR_COSINE */
  float loss;            /* last training loss (informational; NaN ok) */
} trx_ckpt_state;

/* Checks that ckpt_dir is usable before training starts: creates it (and its
 * parents) if missing, fails if it is not a directory or a probe file cannot
 * be created in it. Messages: "out/ckpt: not a directory",
 * "out/ckpt: cannot create directory: Permission denied",
 * "out/ckpt: not writable: Permission denied". */
int trx_ckpt_check_writable(const char *ckpt_dir, char *err, size_t errlen);

/* Makes ckpt_dir this process's own until it exits: an exclusive flock(2) on
 * ckpt_dir/.lock, which then holds "host H pid P" of the owner. A directory
 * another process holds fails with TRX_ERR_IO: "out/ckpt: in use by another
 * run (host H pid P); give each run its own --ckpt-dir". Calling it again in
 * the owning process succeeds. */
int trx_ckpt_lock(const char *ckpt_dir, char *err, size_t errlen);

/* Writes checkpoint `state->step` with the protocol above. params[i] are the
 * n parameters (name, dtype, shape, data). Every buffer here and in
 * trx_ckpt_load and the safetensors functions is host memory (the driver
 * copies the state from and to the device). exp_avg and exp_avg_sq are NULL
 * (no optimizer state: optim.safetensors holds no tensor) or arrays of n F32
 * buffers with the element count of params[i]. extra_json_object_or_null is
 * NULL or a JSON object of string values saved in state.json. */
int trx_ckpt_save(const char *ckpt_dir, const trx_ckpt_state *state, int64_t n,
                  const trx_tensor *params, const float *const *exp_avg,
                  const float *const *exp_avg_sq,
                  const char *extra_json_object_or_null, char *err,
                  size_t errlen);

/* Writes into buf the path "<ckpt_dir>/step-XXXXXXXX" of the latest complete
 * checkpoint: the one named by ckpt_dir/latest when it is valid, otherwise
 * the highest-numbered complete step directory. Returns TRX_OK,
 * TRX_ERR_NOT_FOUND when there is none (buf gets ""), TRX_ERR_ARG when buf is
 * too small, TRX_ERR_IO when ckpt_dir cannot be read. */
int trx_ckpt_latest(const char *ckpt_dir, char *buf, size_t len, char *err,
                    size_t errlen);

/* Why trx_ckpt_latest did not take a newer step: writes into buf, for each
 * step directory of ckpt_dir numbered above `chosen` (a step directory path
 * as trx_ckpt_latest returns), "step-XXXXXXXX (no model.safetensors)" or
 * "(no state.json)", "; "-separated in step order, and for a `latest` file
 * that names an incomplete or missing step, "latest names step-XXXXXXXX,
 * which is incomplete". "" when nothing newer was passed over. Returns the
 * number of entries (0 also for errors and a NULL or empty buf). */
int trx_ckpt_skipped(const char *ckpt_dir, const char *chosen, char *buf,
                     size_t len);

typedef struct trx_ckpt trx_ckpt;

/* Opens a step directory (as returned by trx_ckpt_latest): opens both
 * safetensors files and parses state.json. */
trx_ckpt *trx_ckpt_open(const char *step_dir, char *err, size_t errlen);
/* Copies the saved training state. */
int trx_ckpt_get_state(const trx_ckpt *ck, trx_ckpt_state *out);
/* Value of an "extra" key of state.json, NULL if absent. */
const char *trx_ckpt_extra(const trx_ckpt *ck, const char *key);
/* The open model / optimizer files (owned by ck). */
const trx_safetensors *trx_ckpt_model(const trx_ckpt *ck);
const trx_safetensors *trx_ckpt_optim(const trx_ckpt *ck);
/* Loads the n parameters described by params (name, dtype, shape; data
 * ignored) into param_dst[i], and when exp_avg / exp_avg_sq are not NULL the
 * optimizer state into them. Shapes and dtypes must match exactly and the
 * files must hold no other tensor. */
int trx_ckpt_load(const trx_ckpt *ck, int64_t n, const trx_tensor *params,
                  void *const *param_dst, float *const *exp_avg,
                  float *const *exp_avg_sq, char *err, size_t errlen);
/* NULL is a no-op. */
void trx_ckpt_close(trx_ckpt *ck);

/*===----------------------------------------------------------------------===*/
/* Training-loop helpers                                                    */
/*===----------------------------------------------------------------------===*/

enum trx_lr_schedule { TRX_LR_CONSTANT = 0, TRX_LR_COSINE = 1 };

/* Learning rate for 0-based `step`:
 *   step < warmup:      lr_max * (step + 1) / warmup          (linear warmup)
 *   TRX_LR_CONSTANT:    lr_max
 *   TRX_LR_COSINE:      min_lr + 0.5 * (1 + cos(pi * r)) * (lr_max - min_lr)
 *                       with min_lr = lr_max * min_lr_ratio and
 *                       r = (step - warmup) / (total_steps - warmup)
 *                       clamped to [0, 1]; so lr = lr_max right after warmup
 *                       and lr = min_lr at step >= total_steps (the last
 *                       step of a run, total_steps - 1, is just above min_lr).
 *   total_steps <= warmup: lr_max after warmup.
 * Computed in double, returned as float. A negative step counts as 0; an
 * unknown schedule behaves as TRX_LR_CONSTANT. */
float trx_lr_at(int64_t step, int64_t total_steps, float lr_max, int64_t warmup,
                int schedule, float min_lr_ratio);

/* Monotonic clock (CLOCK_MONOTONIC) in milliseconds. */
double trx_now_ms(void);

typedef struct trx_logger trx_logger;

/* Creates a step logger that prints to `out` (stdout when NULL) and, when
 * json_path is not NULL, appends one JSON object per line to that file.
 * Not thread-safe. */
trx_logger *trx_logger_open(FILE *out, const char *json_path, char *err,
                            size_t errlen);
/* Prints one line
 *   step %5lld | loss %.6f | lr %.3e | grad-norm %.4f | %8.0f tok/s |
 *   %7.2f ms | peak %s
 * (one line, peak = trx_mem_peak_total() as "123.4 MiB"; tok/s = tokens /
 * (ms / 1000)) and appends {"step":..,"loss":..,"lr":..,"grad_norm":..,
 * "tok_per_s":..,"ms":..,"peak_bytes":..} to the JSON file (non-finite
 * numbers as null). Both are flushed. Returns TRX_ERR_IO if a write fails. */
int trx_logger_step(trx_logger *lg, int64_t step, float loss, float lr,
                    float grad_norm, int64_t tokens, double ms);
/* Prints "step %5lld | val loss %.6f" and appends
 * {"step":..,"val_loss":..}. */
int trx_logger_eval(trx_logger *lg, int64_t step, float val_loss);
/* A mixture-of-experts model's routing since the last such line: prints
 * "step %5lld | moe: %.0f of %.0f expert choices dropped (%.2f%%)" and
 * appends {"step":..,"moe_dropped":..,"moe_choices":..}. */
int trx_logger_moe(trx_logger *lg, int64_t step, double dropped,
                   double choices);
/* Flushes and closes the JSON file (not `out`). NULL is a no-op. */
void trx_logger_close(trx_logger *lg);

/*===----------------------------------------------------------------------===*/
/* Training CLI                                                             */
/*===----------------------------------------------------------------------===*/

typedef struct {
  const char *data;      /* --data FILE; NULL = the program's default corpus */
  const char *val_data;  /* --val-data FILE; NULL = no validation */
  int64_t steps;         /* --steps N (>= 0), default 100 */
  float lr;              /* --lr F (>= 0), default 0 = model's configured lr */
  int64_t warmup;        /* --warmup N (>= 0), default 0 */
  int32_t lr_schedule;   /* --lr-schedule cosine|constant, default cosine */
  uint64_t seed;         /* --seed N, default 1337 */
  int64_t eval_every;    /* --eval-every N (>= 0), default 0 = off */
  const char *ckpt_dir;  /* --ckpt-dir DIR, default NULL = no checkpoints */
  int64_t ckpt_every;    /* --ckpt-every N (>= 0), default 0 = only at end */
  int32_t resume;        /* --resume: continue from ckpt_dir's latest */
  const char *init_from; /* --init-from FILE: initial weights */
  int64_t log_every;     /* --log-every N (>= 0), default 1; 0 = off. The
                            loss is read from the device (and checked for
                            divergence) only on logged steps, checkpoint
                            steps and the last step */
  const char *log_json;  /* --log-json FILE: JSON-lines log */
  int32_t verbose;       /* -v, -vv, --verbose (count) */
  int32_t help;          /* --help / -h seen: print usage, exit 0 */
  const char *save_init; /* --save-init FILE: write the initial parameters */
  int64_t threads;       /* --threads N (>= 0), default 0 = BLAS default */
  int64_t val_batches;   /* --val-batches N (>= 1), default 8 */
  float min_lr_ratio;    /* --min-lr-ratio F in [0, 1], default 0.1 */
  int64_t stop_at;       /* --stop-at STEP (>= 0), default 0 = off: end the
                            run after optimizer step STEP as if interrupted;
                            the lr schedule still spans --steps */
  int64_t gradcheck;     /* --gradcheck N (>= 0), default 0 = off: compare
                            each parameter's gradient with central finite
                            differences of the loss along N directions on
                            the first batch, then exit (see README) */
  float gradcheck_tol;   /* --gradcheck-tol F (> 0), default 1e-2: the
                            largest relative L2 error allowed per tensor */
  int32_t shuffle;       /* --shuffle: visit the training batches in a
                            random order drawn from --seed (a new order each
                            epoch); default: sequential */
  const char *trace;     /* --trace FILE: the measured timeline of every
                            rank as one Chrome trace JSON (Perfetto) */
  const char *blas;      /* --blas LIB: the CPU GEMMs through LIB's
                            cblas_sgemm (trx_blas_load); default NULL = the
                            TRIAX_BLAS environment variable, else the
                            linked OpenBLAS */
  float comm_timeout;    /* --comm-timeout S (seconds), default 600, 0 =
                            off: a collective, send or recv waiting longer
                            ends the job with what it waited on
                            (trx_comm_set_timeout) */
  float max_loss_ratio;  /* --max-loss-ratio R (> 1), default 0 = off: read
                            the loss every step before the update, and stop
                            without updating or writing anything when it is
                            not finite or above R times the mean of the
                            previous (up to 10) steps' losses */
  int32_t resume_from_other; /* --resume-from-other: with --resume, continue
                                from a checkpoint written with another run
                                configuration (model, batches, data, seed)
                                as a new run; without it that is refused */
  int32_t strict_topology;   /* --strict-topology: a tensor-parallel group
                                whose ranks are on more than one node
                                (trx_dist_node_of) is an error, not a
                                warning (docs/launch.md) */
  int32_t explain_names;     /* --explain-names: with --init-from, print
                                which checkpoint tensor each parameter is
                                read from (renamed, converted, transposed,
                                sliced) and which are skipped */
} trx_train_args;

/* Sets *out to the defaults. */
void trx_train_args_default(trx_train_args *out);

/* Parses argv[1..argc-1] into *out (defaults first). Flags take their value
 * as the next argument or as --flag=VALUE. String fields point into argv.
 * Returns TRX_OK (check out->help) or TRX_ERR_ARG with a message naming the
 * flag: "unknown flag '--foo'", "--steps: missing value",
 * "--steps: invalid integer 'abc'", "--lr: invalid number 'x'",
 * "--warmup: must be >= 0, got -3",
 * "--lr-schedule: expected 'cosine' or 'constant', got 'linear'",
 * "--val-batches: must be >= 1, got 0",
 * "--min-lr-ratio: must be <= 1, got 2",
 * "--resume requires --ckpt-dir",
 * "--resume-from-other requires --resume". With both --resume and --init-from,
 * --resume wins when a checkpoint exists. */
int trx_parse_train_args(int argc, char **argv, trx_train_args *out, char *err,
                         size_t errlen);

/* Prints the usage text for the flags above. */
void trx_print_train_usage(FILE *f, const char *prog);

/*===----------------------------------------------------------------------===*/
/* Kernel ABI: the functions compiled code calls                            */
/*===----------------------------------------------------------------------===*/
/* Programs compiled by Triax call these through MLIR's C interface
 * (`llvm.emit_c_interface`): a memref argument is passed as a pointer to its
 * descriptor, and a memref result is returned through a descriptor pointer
 * passed as the first argument. Their names and signatures are declared
 * once, in triax_entries.def, which the compiler reads;
 * runtime/lib/cpu/abi_check.cpp checks the prototypes below against it.
 *
 * Compiled code cannot handle an error status, so these functions check
 * their arguments and, on a violation (a compiler or driver bug), print
 * "triax runtime: <function>: <problem>" on stderr and call abort(). */

/* MLIR descriptors of memref<?xf32> and memref<?x?xf32> (any strides). The
 * element at (i, j) is aligned[offset + i*strides[0] + j*strides[1]]. */
typedef struct {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[1];
  int64_t strides[1];
} trx_memref_f32_1d;

/* MLIR descriptor of memref<?xi64>. */
typedef struct {
  int64_t *allocated;
  int64_t *aligned;
  int64_t offset;
  int64_t sizes[1];
  int64_t strides[1];
} trx_memref_i64_1d;

typedef struct {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
} trx_memref_f32_2d;

/* memref<?x?x?xf32>: [batch, rows, cols], element (b, i, j) at
 * aligned[offset + b*strides[0] + i*strides[1] + j*strides[2]]. */
typedef struct {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[3];
  int64_t strides[3];
} trx_memref_f32_3d;

/* bf16 memrefs: each element is the top 16 bits of an IEEE f32 (uint16_t
 * storage; MLIR's bf16). */
typedef struct {
  uint16_t *allocated;
  uint16_t *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
} trx_memref_bf16_2d;

typedef struct {
  uint16_t *allocated;
  uint16_t *aligned;
  int64_t offset;
  int64_t sizes[3];
  int64_t strides[3];
} trx_memref_bf16_3d;

typedef struct {
  uint16_t *allocated;
  uint16_t *aligned;
  int64_t offset;
  int64_t sizes[1];
  int64_t strides[1];
} trx_memref_bf16_1d;

/* C = alpha * op(A) * op(B) + beta * C, op(X) = X^T when the flag is
 * non-zero, through trx_gemm_compute (cblas_sgemm, row-major, on the CPU).
 * M, N are C's sizes, K is A.sizes[1] (A.sizes[0] with transA); op(A) must
 * be M x K and op(B) K x N. Each operand is row-major (inner stride 1, for
 * more than one column, and row stride >= the number of columns) or a
 * transposed view (row stride 1, for more than one row, and inner stride >=
 * the number of rows); the larger stride is passed as lda/ldb/ldc. beta == 0
 * overwrites C without reading it. C must not overlap A or B. Aborts with a
 * message on a shape, stride or overlap violation. */
void _mlir_ciface_trx_sgemm(trx_memref_f32_2d *A, trx_memref_f32_2d *B,
                            trx_memref_f32_2d *C, int32_t transA,
                            int32_t transB, float alpha, float beta);

/* The same on bf16 operands with fp32 accumulation: A, B, C bf16 (C rounded
 * to nearest even once at the end; with beta != 0, C is read as f32 first),
 * or A, B bf16 and C f32. */
void _mlir_ciface_trx_gemm_bf16(trx_memref_bf16_2d *A, trx_memref_bf16_2d *B,
                                trx_memref_bf16_2d *C, int32_t transA,
                                int32_t transB, float alpha, float beta);
void _mlir_ciface_trx_gemm_bf16_f32(trx_memref_bf16_2d *A,
                                    trx_memref_bf16_2d *B, trx_memref_f32_2d *C,
                                    int32_t transA, int32_t transB, float alpha,
                                    float beta);

/* Strided-batched forms on [batch, rows, cols] operands: every matrix
 * follows the 2-D rules above, the batch strides are >= 0, all three
 * batch sizes are equal, and C[b] = alpha op(A[b]) op(B[b]) + beta C[b]
 * for every b. A batch stride of 0 on A or B broadcasts that matrix; C's
 * matrices must not overlap each other, nor any matrix of A or B. */
void _mlir_ciface_trx_sgemm_batched(trx_memref_f32_3d *A, trx_memref_f32_3d *B,
                                    trx_memref_f32_3d *C, int32_t transA,
                                    int32_t transB, float alpha, float beta);
void _mlir_ciface_trx_gemm_bf16_batched(trx_memref_bf16_3d *A,
                                        trx_memref_bf16_3d *B,
                                        trx_memref_bf16_3d *C, int32_t transA,
                                        int32_t transB, float alpha,
                                        float beta);
void _mlir_ciface_trx_gemm_bf16_f32_batched(trx_memref_bf16_3d *A,
                                            trx_memref_bf16_3d *B,
                                            trx_memref_f32_3d *C,
                                            int32_t transA, int32_t transB,
                                            float alpha, float beta);

/* C = alpha * op(A) * op(B) + bias, bias[n] added to every row of C (the
 * GEMM's epilogue on cuBLASLt; beta is 0: C is not read). The operands
 * follow trx_sgemm's rules; bias is a contiguous vector (stride 1) of C's
 * element type and length N (C's columns) that does not overlap C. On the
 * CPU, C is first filled with the bias and the product accumulated into it
 * (beta 1), so the result is bit for bit that of filling C and calling
 * trx_sgemm / trx_gemm_bf16 with beta 1. A linear layer with a bias. */
void _mlir_ciface_trx_sgemm_bias(trx_memref_f32_2d *A, trx_memref_f32_2d *B,
                                 trx_memref_f32_2d *C, trx_memref_f32_1d *bias,
                                 int32_t transA, int32_t transB, float alpha);
void _mlir_ciface_trx_gemm_bf16_bias(trx_memref_bf16_2d *A,
                                     trx_memref_bf16_2d *B,
                                     trx_memref_bf16_2d *C,
                                     trx_memref_bf16_1d *bias, int32_t transA,
                                     int32_t transB, float alpha);

/* GELU epilogues (GPT-2's tanh approximation, the formulas of triax.gelu /
 * triax.gelu_grad), the MLP's first linear and its backward:
 *   gelu(x)         = (0.5 x) (1 + t),
 *   gelu_grad(x, d) = d ((0.5 (1 + t)) + ((0.5 x) (1 - t t)) du),
 *   t = tanh(k0 (x + c ((x x) x))), du = k0 (1 + 3c (x x)),
 * k0 = sqrt(2/pi), c = 0.044715, evaluated in f32 in exactly this order
 * (tanhf, no contraction).
 * - *_bias_gelu: aux = alpha op(A) op(B) + bias (the pre-activation, kept
 *   for the backward; rounded to C's type), then C = gelu(aux) of the
 *   stored aux;
 * - *_dgelu: P = alpha op(A) op(B) (rounded to C's type), then
 *   C = gelu_grad(aux, P) = P gelu'(aux).
 * A, B, C and bias follow trx_sgemm_bias's rules, except that C must be
 * row-major (not a transposed view). aux is M x N of C's element type,
 * row-major (inner stride 1, row stride >= N), and overlaps neither C nor
 * A, B or the bias. On the CPU the GEMM (the bias entry's for bias_gelu,
 * the plain one for dgelu) writes aux / C and a loop applies the formula
 * (trx_gemm_epilogue_host), so the result is bit for bit that of the
 * unfused GEMM + elementwise kernel; on cuBLASLt the epilogue is
 * CUBLASLT_EPILOGUE_GELU_AUX_BIAS / CUBLASLT_EPILOGUE_DGELU (fp32 inside,
 * its own tanh), or the same host loop when cuBLASLt has no algorithm. */
void _mlir_ciface_trx_sgemm_bias_gelu(trx_memref_f32_2d *A,
                                      trx_memref_f32_2d *B,
                                      trx_memref_f32_2d *C,
                                      trx_memref_f32_1d *bias,
                                      trx_memref_f32_2d *aux, int32_t transA,
                                      int32_t transB, float alpha);
void _mlir_ciface_trx_gemm_bf16_bias_gelu(
    trx_memref_bf16_2d *A, trx_memref_bf16_2d *B, trx_memref_bf16_2d *C,
    trx_memref_bf16_1d *bias, trx_memref_bf16_2d *aux, int32_t transA,
    int32_t transB, float alpha);
void _mlir_ciface_trx_sgemm_dgelu(trx_memref_f32_2d *A, trx_memref_f32_2d *B,
                                  trx_memref_f32_2d *C, trx_memref_f32_2d *aux,
                                  int32_t transA, int32_t transB, float alpha);
void _mlir_ciface_trx_gemm_bf16_dgelu(trx_memref_bf16_2d *A,
                                      trx_memref_bf16_2d *B,
                                      trx_memref_bf16_2d *C,
                                      trx_memref_bf16_2d *aux, int32_t transA,
                                      int32_t transB, float alpha);

/* The element types of a trx_gemm_problem. */
enum trx_gemm_type {
  TRX_GEMM_F32 = 0,      /* A, B, C f32 */
  TRX_GEMM_BF16 = 1,     /* A, B, C bf16, fp32 accumulation */
  TRX_GEMM_BF16_F32 = 2, /* A, B bf16, C f32, fp32 accumulation */
};

/* One checked GEMM as the entries above hand it to the backend: row-major,
 * C_b = alpha op(A_b) op(B_b) + beta C_b for b in [0, batch), X_b starting
 * at element b*strideX of X, op(A) M x K, op(B) K x N, C M x N, with
 * leading dimensions lda >= (transA ? M : K), ldb >= (transB ? K : N),
 * ldc >= N. M, N, K and batch are >= 1 and fit an int; the C matrices do
 * not overlap each other or A and B; beta == 0 must not read C. */
typedef struct {
  int32_t type; /* trx_gemm_type */
  int32_t transA, transB;
  int64_t M, N, K, batch;
  const void *A;
  int64_t lda, strideA;
  const void *B;
  int64_t ldb, strideB;
  void *C;
  int64_t ldc, strideC;
  float alpha, beta;
  /* NULL, or N contiguous elements of C's type (TRX_GEMM_F32 or
   * TRX_GEMM_BF16, batch 1 only) added to every row of C after the
   * product; beta is then 0. */
  const void *bias;
  /* The GELU epilogue (trx_gemm_epilogue; TRX_GEMM_EPI_NONE = 0, so a
   * zero-initialized problem has none). With one: TRX_GEMM_F32 or
   * TRX_GEMM_BF16, batch 1, beta 0, and aux an M x N row-major matrix of
   * C's type with row stride ldaux >= N that overlaps no other operand. */
  int32_t epilogue;
  void *aux;
  int64_t ldaux;
} trx_gemm_problem;

/* The epilogues of a trx_gemm_problem (the *_bias_gelu / *_dgelu entries).
 * AB below is alpha op(A) op(B). */
enum trx_gemm_epilogue {
  TRX_GEMM_EPI_NONE = 0,
  /* aux = AB (+ bias, when given), rounded to C's type; C = gelu(aux) */
  TRX_GEMM_EPI_GELU_AUX = 1,
  /* C = gelu_grad(aux, AB rounded to C's type) = AB gelu'(aux) */
  TRX_GEMM_EPI_DGELU = 2,
};

/* Runs a checked GEMM. The CPU runtime's definition is weak (OpenBLAS; bf16
 * operands widened to f32 scratch); libtriax_rt_cuda.a replaces it with
 * cuBLASLt. Called only by the _mlir_ciface_ entries above. */
void trx_gemm_compute(const trx_gemm_problem *p);

/* The GELU part of p's epilogue on the host, element by element in f32
 * (the formulas above; bf16 widened, the result rounded to nearest even):
 * TRX_GEMM_EPI_GELU_AUX: C = gelu(aux), aux already holding AB + bias;
 * TRX_GEMM_EPI_DGELU: C = gelu_grad(aux, C), C already holding AB.
 * Nothing for TRX_GEMM_EPI_NONE. p's pointers are host memory: the CPU
 * backend's epilogue, and the CUDA backend's fallback (on host copies of
 * aux and C, made with trx_copy_to_host and written back with
 * trx_copy_to_device). */
void trx_gemm_epilogue_host(const trx_gemm_problem *p);

/* Causal attention by a library, the calls of `--attention=cudnn`
 * (docs/cuda.md): cuDNN's fused flash attention on the CUDA runtime. The
 * rows of batch index b are b*S .. b*S+S-1 (S = rows / batch); head j is
 * the columns [j*d, (j+1)*d) of q, out, dout, dq (d = cols / heads), query
 * head j reads kv head j / (heads / kv_heads) of k, v, dk, dv (cols
 * kv_heads*d); each is bf16 with unit column stride and any row stride.
 * lse is [batch, heads, S] f32 contiguous: each query row's log-sum-exp of
 * its scaled scores s = scale q.k over the keys at or before it, L = m +
 * log(sum exp(s - m)), written by the forward and read by the backward
 * (the generated kernels' definition: either side may be the library's).
 * The backward writes dq, dk, dv (dk and dv summed over a kv head's query
 * heads).
 * Returns 0 when the library computed the result and non-zero when it
 * declined, having written nothing: no library in this runtime (the CPU
 * runtime always declines), none at run time, TRX_CUDNN=0 in the
 * environment, or a shape it does not take. The compiled code then runs its
 * own kernels. The answer depends on the shapes only, never on the data,
 * so a call needs no sync with the device. Inconsistent operands (sizes,
 * strides) abort with a message, as the GEMMs' do. */
int32_t
_mlir_ciface_trx_fused_attention(trx_memref_bf16_2d *q, trx_memref_bf16_2d *k,
                                 trx_memref_bf16_2d *v, trx_memref_bf16_2d *out,
                                 trx_memref_f32_1d *lse, int64_t batch,
                                 int64_t heads, int64_t kv_heads, float scale);
int32_t _mlir_ciface_trx_fused_attention_grad(
    trx_memref_bf16_2d *q, trx_memref_bf16_2d *k, trx_memref_bf16_2d *v,
    trx_memref_bf16_2d *out, trx_memref_bf16_2d *dout, trx_memref_f32_1d *lse,
    trx_memref_bf16_2d *dq, trx_memref_bf16_2d *dk, trx_memref_bf16_2d *dv,
    int64_t batch, int64_t heads, int64_t kv_heads, float scale);

/* One checked attention as the entries above hand it to the library:
 * element pointers (bf16 as uint16_t storage) and row strides in elements.
 * The forward reads q, k, v and writes out, lse; the backward reads q, k,
 * v, out, dout, lse and writes dq, dk, dv (its out is the forward's). */
typedef struct {
  int64_t batch, seq, heads, kv_heads, head_dim;
  const uint16_t *q, *k, *v;
  int64_t ldq, ldk, ldv;
  uint16_t *out; /* the forward's result; the backward reads it */
  int64_t ldo;
  float *lse;
  const uint16_t *dout;
  int64_t lddo;
  uint16_t *dq, *dk, *dv;
  int64_t lddq, lddk, lddv;
  float scale;
} trx_attention_problem;

/* Runs a checked attention problem, forward (backward == 0) or backward,
 * and returns 0, or declines with non-zero having written nothing: the
 * active device's (lib/cpu/device.h), the CPU's always declining, the CUDA
 * runtime's calling cuDNN (loaded at run time). Called only by the entries
 * above. */
int32_t trx_attention_compute(const trx_attention_problem *p, int32_t backward);

/* In place: buf (contiguous, f32) becomes its reduction (trx_reduce_op)
 * over the group of the mesh axes in axis_mask (bit i = axis i of the mesh
 * given to trx_dist_init), through trx_all_reduce. The collective that
 * dist.all_reduce is lowered to. Aborts the job with a message for a bad
 * mask or view, or when the mesh is not initialized. */
void _mlir_ciface_trx_all_reduce_f32(trx_memref_f32_1d *buf, int32_t op,
                                     int64_t axis_mask);
/* The same on a bf16 buffer (a bf16 model's tensor-parallel partial sums),
 * through trx_all_reduce_bf16: combined in f32, rounded to bf16 at each
 * step of the ring (NCCL: ncclBfloat16). */
void _mlir_ciface_trx_all_reduce_bf16(trx_memref_bf16_1d *buf, int32_t op,
                                      int64_t axis_mask);

/* Sets the threads of a step: with LLVM's OpenMP runtime linked (the CPU
 * binaries), the OpenMP threads, which run the kernels' parallel loops and
 * the pieces trx_gemm_compute cuts a GEMM into (OpenBLAS then runs one
 * thread per call); without it, OpenBLAS's threads. n <= 0 keeps the
 * default count (OMP_NUM_THREADS, or all cores). */
void trx_blas_set_threads(int n);

/* OpenBLAS picks its kernels by the CPU's family and model. A CPU newer than
 * the installed OpenBLAS (Debian 12's 0.3.21 on Intel Emerald Rapids, family
 * 6 model 207) gets its fallback, the SSE3 "Prescott" kernels: sgemm at
 * about a third of the speed. When the chosen kernels lack AVX2 that the
 * CPU has, and OPENBLAS_CORETYPE is not set, this sets it (SkylakeX where
 * the CPU has AVX-512 F/BW/DQ/VL, else Haswell) and executes the program
 * again with the same arguments (OpenBLAS reads the variable when it is
 * loaded); a note goes to stderr unless quiet. Returns only when nothing
 * needs to change or the new start failed (with a note). No-op where the
 * binary has no OpenBLAS (CUDA). */
void trx_blas_select_core(char **argv, int quiet);

/* The CPU GEMMs through another BLAS: dlopens `path` and calls its
 * cblas_sgemm from then on instead of the linked OpenBLAS's (e.g. Intel
 * MKL's libmkl_rt.so, as PyTorch uses on x86). Each call must run on the
 * calling thread, since the kernels' OpenMP threads cut the GEMMs
 * (trx_gemm_compute): MKL is set to its sequential layer and an OpenBLAS to
 * one thread. Results are the library's: another summation order than
 * OpenBLAS's, so losses agree to rounding, not bit for bit. Returns
 * TRX_ERR_ARG with a message (the path and the loader's reason) when the
 * library cannot be loaded or has no cblas_sgemm, or in a binary whose
 * GEMMs run on the GPU. Call before the first GEMM. */
int trx_blas_load(const char *path, char *err, size_t errlen);

/* The BLAS the CPU GEMMs call, in words (for -v). */
const char *trx_blas_describe(void);

typedef struct trx_param_desc trx_param_desc; /* defined below */

/* Binds the training-state buffers that the trx_state_* views show: for
 * parameter i of params[0..n-1], param_bufs[i], exp_avg[i], exp_avg_sq[i]
 * and grads[i] each hold its numel elements (row-major, contiguous; the
 * parameter and gradient in the parameter's dtype, the moments f32), and
 * masters[i] its f32 master copy when it is bf16 (masters may be NULL when
 * no parameter is; masters[i] is ignored for an f32 parameter). The
 * pointer arrays are copied; params and the buffers must stay valid while
 * bound. The buffers are the compiled code's (trx_alloc blocks: device
 * memory on the CUDA target); the runtime never dereferences them. n = 0
 * unbinds. trx_train_main binds its own buffers; a hand-written driver calls
 * this itself. Returns TRX_ERR_ARG for a NULL buffer or an invalid parameter
 * description. Not thread-safe with respect to concurrent trx_state_* calls. */
int trx_state_bind(int64_t n, const trx_param_desc *params,
                   void *const *param_bufs, float *const *exp_avg,
                   float *const *exp_avg_sq, void *const *grads,
                   float *const *masters, char *err, size_t errlen);

/* Fills *out with a view of the state buffer `kind` (trx_state_kind) of
 * parameter `index` (its position in the model descriptor): sizes = the
 * parameter's shape, strides [1] / [cols, 1], offset 0. Aborts with a
 * message when nothing is bound, or for a bad kind, index or rank (a rank-2
 * parameter through _1d or the reverse). */
void _mlir_ciface_trx_state_1d(trx_memref_f32_1d *out, int32_t kind,
                               int64_t index);
void _mlir_ciface_trx_state_2d(trx_memref_f32_2d *out, int32_t kind,
                               int64_t index);
/* The same views of the bf16 buffers of a bf16 parameter (its
 * TRX_STATE_PARAM and TRX_STATE_GRAD): an f32 view of a bf16 buffer, or a
 * bf16 view of an f32 one (the moments, the master copy, any buffer of an
 * f32 parameter), aborts naming the parameter. */
void _mlir_ciface_trx_state_bf16_1d(trx_memref_bf16_1d *out, int32_t kind,
                                    int64_t index);
void _mlir_ciface_trx_state_bf16_2d(trx_memref_bf16_2d *out, int32_t kind,
                                    int64_t index);

/* The view of this rank's ZeRO chunk of state `kind` of parameter `index`
 * (1-D, ceil(numel / g) elements, see trx_param_desc::zero_stage): the
 * whole buffer of a sharded kind, the chunk at the rank's group position in
 * the padded parameter buffer at stages 1 and 2. Aborts for a parameter
 * without ZeRO. */
/* Mixture-of-experts counters (trx_moe_counter): each triax.moe_route adds
 * the expert choices its capacity dropped and all its choices (floats:
 * exact to 2^24). A view of TRX_MOE_NCOUNTERS floats of `counters`, bound
 * by the driver (trx_alloc memory: on the device under CUDA), or of a
 * block of the runtime's own when nothing is bound (an evaluation or
 * gradient check outside the training loop). */
void trx_moe_counters_bind(float *counters);
void _mlir_ciface_trx_moe_counters(trx_memref_f32_1d *out);

void _mlir_ciface_trx_state_chunk(trx_memref_f32_1d *out, int32_t kind,
                                  int64_t index);
void _mlir_ciface_trx_state_chunk_bf16(trx_memref_bf16_1d *out, int32_t kind,
                                       int64_t index);

/* ZeRO stages 1 and 2: after every member updated its chunk of parameter
 * `index`, gathers the chunks into every member's full (padded) copy, in
 * place, over the parameter's ZeRO group (`axis_mask` must name it). */
void trx_zero_all_gather_param(int64_t index, int64_t axis_mask);

/* Collectives of compiled code on contiguous f32 buffers over the group of
 * the mesh axes in axis_mask (bit i = axis i):
 * reduce_scatter: `in` (n elements) is padded with zeros to g*k, k = size
 *   of `out`, which must be ceil(n / g); out = block (group position) of the
 *   reduction.
 * all_gather: out (n elements, k = ceil(n / g)) = the members' `in` blocks (k
 *   elements each) concatenated in group order, cut to n.
 * broadcast: buf of every member becomes the one of group position root.
 * send/recv: to/from group position `peer`, tag 0..TRX_DIST_MAX_TAG. */
void _mlir_ciface_trx_reduce_scatter_f32(trx_memref_f32_1d *in,
                                         trx_memref_f32_1d *out, int32_t op,
                                         int64_t axis_mask);
void _mlir_ciface_trx_all_gather_f32(trx_memref_f32_1d *in,
                                     trx_memref_f32_1d *out, int64_t axis_mask);
/* The same two on bf16 buffers (a bf16 model's gradients and parameters):
 * the reduction widens to f32 and rounds to bf16 as trx_all_reduce_bf16. */
void _mlir_ciface_trx_reduce_scatter_bf16(trx_memref_bf16_1d *in,
                                          trx_memref_bf16_1d *out, int32_t op,
                                          int64_t axis_mask);
void _mlir_ciface_trx_all_gather_bf16(trx_memref_bf16_1d *in,
                                      trx_memref_bf16_1d *out,
                                      int64_t axis_mask);
void _mlir_ciface_trx_broadcast_f32(trx_memref_f32_1d *buf, int64_t root,
                                    int64_t axis_mask);
void _mlir_ciface_trx_send_f32(trx_memref_f32_1d *buf, int64_t peer,
                               int64_t tag, int64_t axis_mask);
void _mlir_ciface_trx_recv_f32(trx_memref_f32_1d *buf, int64_t peer,
                               int64_t tag, int64_t axis_mask);
/* send/recv of bf16 buffers (a bf16 model's activations and their
 * gradients between pipeline stages): 2 bytes an element. */
void _mlir_ciface_trx_send_bf16(trx_memref_bf16_1d *buf, int64_t peer,
                                int64_t tag, int64_t axis_mask);
void _mlir_ciface_trx_recv_bf16(trx_memref_bf16_1d *buf, int64_t peer,
                                int64_t tag, int64_t axis_mask);

/* All-to-all (expert parallelism's dispatch and combine): `send` and `recv`
 * are contiguous and of the same size n, which the group's size g divides;
 * `send` holds g chunks of n/g elements in group order, chunk j goes to the
 * member at position j, and chunk i of `recv` is the chunk the member at
 * position i sent to this rank (its chunk number p, p this rank's
 * position): JAX's all_to_all / MPI_Alltoall on the group of the mesh axes
 * in axis_mask. Stream-ordered on a device (the compiled code reads recv
 * next). A group of one copies; otherwise the buffers must not overlap.
 * The C front trx_all_to_all (below) has the details; misuse aborts naming
 * this function. */
void _mlir_ciface_trx_all_to_all_f32(trx_memref_f32_1d *send,
                                     trx_memref_f32_1d *recv,
                                     int64_t axis_mask);
/* The same on bf16 buffers (trx_all_to_all_bf16), misuse naming
 * trx_all_to_all_bf16. */
void _mlir_ciface_trx_all_to_all_bf16(trx_memref_bf16_1d *send,
                                      trx_memref_bf16_1d *recv,
                                      int64_t axis_mask);

/* The ring of context parallelism (ring attention): trx_shift_start_f32
 * starts sending `send` to position (p + 1) mod g of the group of the mesh
 * axes in axis_mask (p this rank's position, g the group's size) and
 * receiving as many elements into `recv` from position (p - 1) mod g, in
 * `slot` (0..TRX_SHIFT_SLOTS-1), and returns at once; trx_shift_wait(slot)
 * returns when recv holds them and send may be written again (on a device:
 * the compute stream waits for the exchange, the host does not). Both
 * buffers are contiguous and of the same size. Shifts of several slots may
 * be in flight; a slot is started again only after its wait, and neither
 * buffer is touched in between. A group of one copies send to recv. The
 * C front trx_shift_start / trx_shift_wait_slot (below) has the details;
 * misuse aborts naming these functions. */
void _mlir_ciface_trx_shift_start_f32(trx_memref_f32_1d *send,
                                      trx_memref_f32_1d *recv,
                                      int64_t axis_mask, int64_t slot);
/* The same on bf16 buffers (a bf16 model's key and value blocks: 2 bytes
 * an element). */
void _mlir_ciface_trx_shift_start_bf16(trx_memref_bf16_1d *send,
                                       trx_memref_bf16_1d *recv,
                                       int64_t axis_mask, int64_t slot);
void trx_shift_wait(int64_t slot);

/* Gradient buckets (dist.all_reduce_grads): reduces the gradient buffers of
 * the parameters in `params` (indices) over the group in place, packed
 * into one message, when the accumulation boundary is set; otherwise does
 * nothing. */
void _mlir_ciface_trx_all_reduce_grads(trx_memref_i64_1d *params, int32_t op,
                                       int64_t axis_mask);
/* --trace: the compiled pipeline schedule brackets each stage function call
 * with these (kind a trx_pass_kind; the micro-batch's index in the step;
 * the model chunk of the interleaved schedule, or -1); they record nothing
 * unless the run traces. */
void trx_trace_begin(int64_t kind, int64_t micro_batch, int64_t chunk);
void trx_trace_end(void);

/* Whether the next forward_backward call is the last micro-batch of an
 * optimizer step (the accumulation boundary). The training driver sets it
 * before each micro-batch; it starts set, so a program that calls
 * forward_backward once per step needs nothing. */
void trx_set_accumulation_boundary(int last_micro_batch);

/* Whether the next forward_backward call is the first of an optimizer step:
 * the compiled code then writes its mean loss into loss_acc instead of
 * adding to it (trx_first_micro_batch, 1 or 0), so the accumulator needs
 * no zeroing between steps. The driver sets it before each call; it
 * starts set. */
void trx_set_first_micro_batch(int first);
int64_t trx_first_micro_batch(void);

/* This rank's position in the group of the mesh axes in axis_mask (0
 * without a mesh). */
int64_t trx_group_position(int64_t axis_mask);

/* The allocator of compiled code (MLIR's generic allocation functions,
 * finalize-memref-to-llvm{use-generic-functions}): activations, gradients
 * and other temporaries, charged to TRX_MEM_ACTIV so the peak is measured.
 * Memory is at least 64-byte aligned; `alignment` must be a power of two.
 * It is zero-filled on the CPU but not on CUDA (device memory; see
 * trx_alloc and TRX_ALLOC_POISON): the compiled code writes every element
 * before it reads it. Both are freed by _mlir_memref_to_llvm_free (NULL is a
 * no-op). Out of memory, a bad alignment, or freeing anything else (a
 * state buffer, a foreign or already freed pointer) aborts with a
 * message. */
void *_mlir_memref_to_llvm_alloc(size_t size);
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size);
void _mlir_memref_to_llvm_free(void *ptr);

/* Like trx_alloc, aligned to max(alignment, 64) bytes; alignment must be a
 * power of two (TRX_ERR_ARG message in trx_last_error() otherwise). Freed by
 * trx_free. */
void *trx_alloc_aligned(size_t bytes, size_t alignment, int category);

/*===----------------------------------------------------------------------===*/
/* Model descriptor and training driver                                     */
/*===----------------------------------------------------------------------===*/
/* The compiler emits one trx_model_desc per model plus
 *     int main(int argc, char **argv) {
 *       return trx_train_main(argc, argv, &desc);
 *     }
 * and trx_train_main is the whole training program: CLI, data, parameter
 * init, the training loop, evaluation, logging and checkpoints. */

struct trx_param_desc {
  const char *name; /* unique, e.g. "wte.weight" (the checkpoint name) */
  int32_t rank;     /* 1 or 2 */
  int64_t shape[2]; /* shape[0] (and shape[1] for rank 2), all > 0 */
  int32_t init;     /* trx_param_init */
  float init_std;   /* standard deviation for TRX_INIT_NORMAL (>= 0) */
  int32_t decay;    /* non-zero: AdamW weight decay applies */
  /* The tensor this parameter is stored in by checkpoints, --save-init and
   * --init-from; NULL = its own name. Parameters sharing a checkpoint name
   * are concatenated along their last dimension in parameter order (their
   * other dimensions must agree): GPT-2's separate q, k and v projections
   * are stored as Hugging Face's fused h.N.attn.c_attn.weight [H, 3H]. */
  const char *ckpt_name;
  /* Non-zero (rank 2 only, with its own checkpoint name): checkpoints,
   * --save-init and --init-from hold the transpose [shape[1], shape[0]],
   * as PyTorch's nn.Linear holds a weight (the LLaMA family's layout in
   * Hugging Face checkpoints). */
  int32_t ckpt_transposed;
  /* Non-zero: the rows are ckpt_slices equal slices (stacked experts
   * [E, in, out] as rows [E*in, out]), each its own checkpoint tensor named
   * ckpt_name with its one '*' replaced by the slice's index (and
   * transposed with ckpt_transposed: Mixtral's experts.N.w1.weight). */
  int32_t ckpt_slices;
  /* Placement over the device mesh (all 0: every rank holds all of it).
   * Tensor and expert parallelism: the parameter as declared, of split_rank
   * (1 to 3) dimensions split_shape, holds the elements of the rows x
   * columns above in the same order (the experts' [E, in, out] are
   * [E*in, out]); its dimension d is split evenly over the mesh axes of
   * split_axes[d] (bit i = axis i; 0: not split), the member at position c
   * of that group holding block c along d. A rank's block is row-major in
   * its own dimensions: the state of [E/ep, in, out/tp] is
   * [E/ep*in, out/tp]. */
  int32_t split_rank;
  int64_t split_shape[3];
  uint32_t split_axes[3];
  /* ZeRO (#dist.zero) over the mesh axes of zero_axes: stage 1 shards the
   * AdamW moments, 2 also the gradient buffer, 3 also the parameter. A
   * sharded buffer is chunk c = [c*k, (c+1)*k) of the (split) parameter's
   * row-major elements padded with zeros to g*k, k = ceil(numel / g), g the
   * group size, c this rank's group position. At stages 1 and 2 the
   * replicated parameter buffer is allocated padded to g*k so that the
   * chunks can be gathered in place. Stage 0: none. */
  int32_t zero_stage;
  uint32_t zero_axes;
  /* Pipeline parallelism (dist.stage / dist.tied_stages): bit s of stages
   * set = the ranks at position s on the mesh axes of stage_axes (the
   * pipeline axis) hold the parameter and its state; the others hold nothing of
   * it. stages = 0: every rank holds it. A parameter held by several
   * stages (an embedding tied to the head) is kept identical on them by
   * the compiled optimizer step; checkpoints take it from the lowest. */
  uint32_t stages;
  uint32_t stage_axes;
  /* The parameter's dtype (trx_dtype; 0 = TRX_F32). A TRX_BF16 parameter
   * (triax-model --dtype bf16) holds its parameter and gradient buffers in
   * bf16 and an f32 master copy (TRX_STATE_MASTER) next to the f32 AdamW
   * moments: 2 + 2 + 12 bytes per element, the ZeRO paper's mixed-precision
   * Adam. The master copy is the parameter's value for initialization,
   * checkpoints, --save-init and --init-from; the bf16 buffer is its
   * rounding (to nearest even), written by every AdamW step. */
  int32_t dtype;
  /* A padded parameter (triaxc's triax-pad-vocab: GPT-2's vocabulary of
   * 50,257 computed as 50,304): its values are the leading block
   * valid_shape[0] (x valid_shape[1] for rank 2) of shape, the rest is
   * zero and stays zero (the compiled loss gives it no gradient).
   * Initialization draws the block as it would an unpadded parameter of
   * that shape (the same values), and checkpoints, --save-init and
   * --init-from hold the block only, so they are the unpadded model's.
   * All 0: not padded. */
  int64_t valid_shape[2];
};

/* What lib/Driver/ModelDescriptor.cpp generates, with designated
 * initializers (fields may be added anywhere; one the generator does not
 * set is zero). */
typedef struct {
  const char *model_name;
  int64_t num_params;           /* >= 1 */
  const trx_param_desc *params; /* num_params entries, in the compiler's
                                   parameter-index order */
  int64_t micro_batch, global_batch, seq, vocab;
  /* From the model's training config. lr is the default peak lr. */
  float lr, beta1, beta2, eps, weight_decay, grad_clip;
  /* Compiled entry points (wrapped by generated C code). They reach the
   * parameters, moments and gradient buffers through trx_state_1d/2d.
   * tokens and targets are micro_batch x seq, row-major, int32, in a
   * trx_alloc block (device memory on the CUDA target: the compiled code
   * reads them in kernels). loss_acc and grad_norm point to one float each
   * in a trx_alloc block of TRX_MEM_OTHER (device memory on CUDA): the two
   * training entries write them on the device and return nothing, so a
   * step needs no host synchronization; the driver reads both with one
   * trx_copy_to_host on the steps that need them. */
  /* Forward and backward on one micro-batch: adds its mean loss to
   * loss_acc[0] (f32, on the device; the step's first call, as
   * trx_first_micro_batch() says, writes it instead) and its gradients to
   * the gradient buffers (TRX_STATE_GRAD). */
  void (*forward_backward)(const int32_t *tokens, const int32_t *targets,
                           float *loss_acc);
  /* One AdamW step (`step` counts from 1) at learning rate `lr` from the
   * gradient buffers scaled by grad_scale (1 / micro-batches): clips by the
   * global norm and writes that norm (of the scaled gradients, before
   * clipping) to grad_norm[0], on the device. */
  void (*optimizer_step)(float lr, int64_t step, float grad_scale,
                         float *grad_norm);
  /* Mean loss only, no update, returned to the host (evaluation and
   * --gradcheck; it may synchronize). May be NULL (then --val-data is
   * refused). */
  float (*forward)(const int32_t *tokens, const int32_t *targets);
  /* The device mesh the model was compiled for (the module's dist.mesh; a
   * one-axis data mesh of size 1 when it has none), axes in mesh order:
   * the order of the axis masks in the compiled collectives, handed as it
   * is to trx_dist_init. num_mesh_axes = 0 (a descriptor without these
   * fields) is a mesh of one device. mesh_axis_roles gives each axis's
   * trx_axis_role (TRX_AXIS_NONE for a name outside the compiler's
   * axis-role table; NULL: none has a role): the driver splits the data
   * over the TRX_AXIS_DATA axis (size 1 when there is none) and sums the
   * pipeline's loss over the TRX_AXIS_PIPELINE axis. */
  int32_t num_mesh_axes;
  const char *const *mesh_axis_names;
  const int64_t *mesh_axis_sizes;
  const int32_t *mesh_axis_roles;
  /* Pipeline parallelism: > 0 when forward_backward is the pipeline's
   * schedule (dist-pipeline's @pipeline_step): one call takes this many
   * micro-batches stacked (pipeline_microbatches * micro_batch rows of
   * tokens and targets), accumulates their gradients on each stage, and
   * adds their mean loss to loss_acc on the last stage (0 on the others).
   * It must be the number of micro-batches per step and dp rank. 0: one
   * micro-batch per call. */
  int64_t pipeline_microbatches;
  /* The device the compiled kernels run on and its buffers live on: "cpu"
   * or "cuda" (NULL: "cpu"). trx_train_main refuses a model whose device is
   * not the runtime's active one (runtime/lib/cpu/device.h: the CUDA device
   * is there when libtriax_rt_cuda.a is linked whole). */
  const char *device;
  /* The GPUs per node the plan assumed when the program was compiled from
   * one (triaxc --plan ... --apply: the hardware's, or the plan's
   * gpus-per-node); 0: not from a plan. The driver compares the job's
   * nodes with it (docs/launch.md). */
  int64_t plan_gpus_per_node;
  /* The config.json transformers' from_pretrained needs for this model's
   * checkpoints (GPT-2's: their model.safetensors is in its layout); NULL
   * when there is none. The driver saves it in every checkpoint
   * directory. */
  const char *hf_config;
  /* Whether the model has mixture-of-experts routes (triax.moe_route),
   * which add to the trx_moe_counters: the driver then reads them with
   * the loss and logs the choices dropped. 0: none. */
  int32_t has_moe;
} trx_model_desc;

/* Deterministic N(0, std^2) fill used for TRX_INIT_NORMAL: parameter
 * `index` draws from its own stream, so adding a parameter does not change
 * the others:
 *   sm = seed ^ (0xD1B54A32D192ED03 * (index + 1))             (mod 2^64)
 *   xoshiro256** state s[0..3] = four splitmix64_next(&sm)  (see the loader)
 *   for each pair of elements (row-major): x = next(), y = next();
 *     u1 = ((x >> 11) + 1) * 2^-53          (in (0, 1])
 *     u2 = (y >> 11) * 2^-53                (in [0, 1))
 *     r = sqrt(-2 ln u1); z0 = r cos(2 pi u2); z1 = r sin(2 pi u2)
 *     elements get (float)(std * z0), (float)(std * z1)  (in double)
 *   an odd last element uses z0 of a final pair.
 * xoshiro256** next(): result = rotl(s1 * 5, 7) * 9; t = s1 << 17;
 *   s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3; s2 ^= t; s3 = rotl(s3, 45). */
void trx_init_normal(float *dst, int64_t n, float std, uint64_t seed,
                     int64_t index);

/* The training program. Returns the process exit status: 0 on success (and
 * for --help), 1 on an error (message "error: ..." naming the file and the
 * problem on stderr; nothing that exists is overwritten), 2 for a bad
 * command line. See runtime/README.md for the whole behaviour. */
int trx_train_main(int argc, char **argv, const trx_model_desc *model);

/* The built-in training corpus (an llm.c .bin image of the toy-grammar
 * corpus of tools/triax-gen-corpus.py, byte tokens, vocab 256), used when
 * no --data is given. */
extern const unsigned char trx_default_corpus[];
extern const unsigned long trx_default_corpus_size;

/*===----------------------------------------------------------------------===*/
/* Distributed runtime (CPU: MPI)                                           */
/*===----------------------------------------------------------------------===*/
/* One process (rank) per device of a mesh with named axes, started by
 * mpirun. Implemented in lib/cpu/comm.cpp; the library then needs MPI
 * (CMake: MPI::MPI_C; by hand: -lmpi). runtime/README.md has the details.
 *
 * Layout: the axes are in the order given to trx_dist_init, the last one
 * innermost, so for sizes s0..s{k-1} and coordinates c0..c{k-1}
 *     rank = ((c0*s1 + c1)*s2 + c2)*... + c{k-1}
 * e.g. axes dp, pp, tp: rank = (dp_i*pp + pp_i)*tp + tp_i.
 *
 * Groups: a collective over an axis list runs among the ranks that differ
 * only in the coordinates of those axes (prod of their sizes ranks). A
 * member's position in the group linearizes its coordinates on the listed
 * axes in the order they are listed, first major, last minor (the same
 * formula as the rank). The lists (dp, tp) and (tp, dp) are the same
 * ranks in a different order. Axis lists are arrays of axis indices (positions
 * in the mesh); they must be non-empty, in range and without repetitions.
 *
 * Threads: MPI is initialized with MPI_THREAD_FUNNELED; every trx_dist_*,
 * collective and point-to-point call must come from the thread that called
 * trx_dist_init. The counters may be read from any thread.
 *
 * Errors: trx_dist_init reports through (err, errlen) like the rest of the
 * library. Everything after it cannot fail quietly in a multi-process job:
 * misuse (not initialized, a bad axis list, a bad root, peer, tag or size)
 * and every MPI error (MPI_ERRORS_RETURN is set on all communicators) end
 * the whole job through trx_dist_abort, with a message naming the function
 * (and the MPI call). */

#define TRX_DIST_MAX_AXES 8
/* Largest tag of trx_send/trx_recv (tags 32760..32767 are internal). */
#define TRX_DIST_MAX_TAG 32759

/* Starts MPI (MPI_Init_thread, MPI_THREAD_FUNNELED; an MPI that is already
 * initialized is used as it is and left running by trx_dist_finalize) and
 * sets up the mesh: naxes (0..TRX_DIST_MAX_AXES) axes named axis_names[i]
 * ([A-Za-z0-9_]+, at most 31 characters, unique) of sizes axis_sizes[i] >= 1.
 * The product of the sizes must equal the MPI world size:
 *   "mesh dp=2 x pp=2 x tp=2 needs 8 ranks but mpirun started 4"
 * A mesh of one device also runs as a plain process without mpirun (MPI
 * singleton). Creates one communicator per axis (MPI_Comm_split, color = the
 * coordinates on the other axes, key = the coordinate on the axis); this
 * is collective over all ranks. Returns TRX_OK, TRX_ERR_ARG for bad
 * arguments, a second call or a wrong world size, or TRX_ERR_IO when MPI
 * fails. On failure after MPI was started here, MPI is finalized again
 * (every rank fails the same way, so this does not hang), so the caller
 * only prints the message and exits non-zero. argc/argv may be NULL.
 * Test hook: the environment variable TRX_COMM_MAX_MESSAGE (bytes, 1..2^30,
 * default 2^30) caps the size of one MPI message; larger transfers are
 * split. */
int trx_dist_init(int *argc, char ***argv, const char *const *axis_names,
                  const int64_t *axis_sizes, int32_t naxes, char *err,
                  size_t errlen);

/* Frees the communicators and calls MPI_Finalize (when trx_dist_init
 * started MPI). Collective: every rank must call it. A no-op without a
 * successful trx_dist_init; afterwards the trx_dist_* queries answer as
 * if not initialized. MPI cannot be started a second time. */
void trx_dist_finalize(void);

/* Non-zero between a successful trx_dist_init and trx_dist_finalize. */
int trx_dist_initialized(void);

/* This process's world rank, and the world size (0 and 1 when not
 * initialized). */
int trx_dist_rank(void);
int trx_dist_world_size(void);

/* The mesh: number of axes, name, size and this rank's coordinate of axis
 * `axis`; the index of the axis called `name`. Out of range or not
 * initialized: NULL, -1. */
int32_t trx_dist_num_axes(void);
const char *trx_dist_axis_name(int32_t axis);
int64_t trx_dist_axis_size(int32_t axis);
int64_t trx_dist_coord(int32_t axis);
int32_t trx_dist_axis_index(const char *name);

/* Writes this rank's coordinates as "dp=1 pp=0 tp=1" into buf (empty for a
 * mesh without axes). Returns buf. */
char *trx_dist_coord_str(char *buf, size_t len);

/* The nodes (machines) of the job, found by trx_dist_init: the ranks that
 * share memory (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED) are one node,
 * and the nodes are numbered in the order of their lowest world rank (a
 * world of one rank without MPI is one node). Test hook: the environment
 * variable TRX_RANKS_PER_NODE=K (an integer >= 1, checked before MPI starts;
 * a bad value makes trx_dist_init fail naming it) replaces what MPI reports
 * with pretend nodes of K consecutive ranks: ranks [0,K) node 0, [K,2K)
 * node 1, ..., the last one smaller when K does not divide the world size.
 * trx_dist_num_nodes: the number of nodes (0 when not initialized);
 * trx_dist_node_of: the node of world rank `rank`; trx_dist_node_size: the
 * number of ranks on node `node` (-1 when out of range or not
 * initialized). */
int32_t trx_dist_num_nodes(void);
int32_t trx_dist_node_of(int32_t rank);
int32_t trx_dist_node_size(int32_t node);

/* The group of axis list axes[0..n-1] (see "Groups" above): the
 * communicator of that axis set, created on first use and cached. The
 * single axes' communicators exist from trx_dist_init on; the first use
 * of a set of several axes creates its communicator with
 * MPI_Comm_create_group, which is collective over that group's members
 * only (every member must reach it; the first collective over the set does
 * so automatically). The same axes in another order share the
 * communicator. Returns NULL with a message in trx_last_error() for a bad
 * list or when not initialized. Valid until trx_dist_finalize. */
typedef struct trx_dist_group trx_dist_group;
const trx_dist_group *trx_dist_comm(const int32_t *axes, int32_t n);

/* Size of the group, this rank's position in it, the world rank of the
 * member at position `pos` (-1 when out of range), and the set of its axes
 * as a bit mask (bit i = axis i). */
int32_t trx_dist_group_size(const trx_dist_group *g);
int32_t trx_dist_group_position(const trx_dist_group *g);
int32_t trx_dist_group_member(const trx_dist_group *g, int32_t pos);
uint32_t trx_dist_group_mask(const trx_dist_group *g);

/* MPI_Barrier over all ranks. */
void trx_dist_barrier(void);

/* Ends the whole job: prints "rank 3 (dp=1 pp=0 tp=1): <message>" on
 * stderr and calls MPI_Abort(MPI_COMM_WORLD, 1), so mpirun stops every rank
 * and exits non-zero instead of letting the others wait forever in a
 * collective. Without an initialized MPI it prints
 * "triax runtime: <message>" and exits with 1. Never returns. */
void trx_dist_abort(const char *message);

/* For callers that make their own MPI calls: returns when mpi_rc is
 * MPI_SUCCESS (0), otherwise calls trx_dist_abort with
 * "<call> failed: <MPI error string>". */
void trx_dist_check_mpi(int mpi_rc, const char *call);

/* Collectives over the group of axes[0..naxes-1], every member calling with
 * the same arguments (sizes, op, root, axes in the same order). Element
 * counts are int64 and may be 0. They are ring algorithms on
 * MPI_Sendrecv with a fixed schedule, so a result depends only on the
 * inputs, the group size and n: bit for bit the same on every member and
 * in every run.
 *
 * all_reduce: buf[0..n-1] in place becomes the reduction over the group.
 *   Ring reduce-scatter then ring all-gather over p chunks,
 *   chunk c = [n*c/p, n*(c+1)/p).
 * all_gather: recv[0 .. p*n_per_rank-1] = the members' send blocks
 *   concatenated in group order (send may be recv + pos*n_per_rank, in
 *   place).
 * reduce_scatter: send has p*n_per_rank elements; recv (n_per_rank) gets
 *   block `pos` of the reduction over the group. recv may alias send.
 * broadcast: buf of every member becomes the one of position root
 *   (pipelined chain root -> root+1 -> ... in segments of 256 KiB).
 * send/recv: blocking MPI_Send/MPI_Recv to/from the member at position
 *   peer (not this rank's own position), 0 <= tag <= TRX_DIST_MAX_TAG. A
 *   send may wait for the matching recv. recv aborts when the message's
 *   size differs from n.
 * all_to_all: send and recv hold p chunks of n_per_rank elements each,
 *   in group order: chunk j of send goes to position j, and chunk i of
 *   recv comes from position i (the chunk number pos of its send), like
 *   MPI_Alltoall. Pairwise exchange: at step k = 1..p-1, MPI_Sendrecv of
 *   chunk (pos+k) mod p to position (pos+k) mod p and of chunk (pos-k) mod
 *   p from position (pos-k) mod p; the own chunk is copied. send and recv
 *   must not overlap, except in a group of one, where it copies send to
 *   recv (nothing when they are the same buffer). */
void trx_all_reduce(float *buf, int64_t n, int32_t op, const int32_t *axes,
                    int32_t naxes);
void trx_all_gather(const float *send, int64_t n_per_rank, float *recv,
                    const int32_t *axes, int32_t naxes);
void trx_reduce_scatter(const float *send, int64_t n_per_rank, float *recv,
                        int32_t op, const int32_t *axes, int32_t naxes);
void trx_broadcast(float *buf, int64_t n, int32_t root, const int32_t *axes,
                   int32_t naxes);
void trx_send(const float *buf, int64_t n, int32_t peer, const int32_t *axes,
              int32_t naxes, int32_t tag);
void trx_recv(float *buf, int64_t n, int32_t peer, const int32_t *axes,
              int32_t naxes, int32_t tag);
void trx_all_to_all(const float *send, int64_t n_per_rank, float *recv,
                    const int32_t *axes, int32_t naxes);
/* The same on int32 elements. */
void trx_all_reduce_i32(int32_t *buf, int64_t n, int32_t op,
                        const int32_t *axes, int32_t naxes);
void trx_all_gather_i32(const int32_t *send, int64_t n_per_rank, int32_t *recv,
                        const int32_t *axes, int32_t naxes);
void trx_reduce_scatter_i32(const int32_t *send, int64_t n_per_rank,
                            int32_t *recv, int32_t op, const int32_t *axes,
                            int32_t naxes);
void trx_broadcast_i32(int32_t *buf, int64_t n, int32_t root,
                       const int32_t *axes, int32_t naxes);
void trx_send_i32(const int32_t *buf, int64_t n, int32_t peer,
                  const int32_t *axes, int32_t naxes, int32_t tag);
void trx_recv_i32(int32_t *buf, int64_t n, int32_t peer, const int32_t *axes,
                  int32_t naxes, int32_t tag);
void trx_all_to_all_i32(const int32_t *send, int64_t n_per_rank, int32_t *recv,
                        const int32_t *axes, int32_t naxes);
/* all_reduce on bf16 elements (uint16_t: the top 16 bits of an IEEE f32),
 * in the same ring schedule: each combine widens both operands to f32,
 * adds (or takes the max / min) there and rounds the sum to nearest even,
 * so partial sums are rounded to bf16 at every step of the ring;
 * TRX_REDUCE_AVG widens the bf16 sum, divides it by the group size in f32
 * and rounds that to bf16. A sum whose partial sums are all bf16 values
 * is exact. */
void trx_all_reduce_bf16(uint16_t *buf, int64_t n, int32_t op,
                         const int32_t *axes, int32_t naxes);
/* all_gather of bf16 elements: 2 bytes each, moved as they are; and
 * reduce_scatter of bf16 elements, combined as trx_all_reduce_bf16
 * combines them. */
void trx_all_gather_bf16(const uint16_t *send, int64_t n_per_rank,
                         uint16_t *recv, const int32_t *axes, int32_t naxes);
void trx_reduce_scatter_bf16(const uint16_t *send, int64_t n_per_rank,
                             uint16_t *recv, int32_t op, const int32_t *axes,
                             int32_t naxes);
/* send, recv and all_to_all of bf16 elements (a bf16 model's pipeline
 * activations and expert tokens): 2 bytes each, moved as they are; the
 * checks, tags and counters of trx_send / trx_recv / trx_all_to_all. */
void trx_send_bf16(const uint16_t *buf, int64_t n, int32_t peer,
                   const int32_t *axes, int32_t naxes, int32_t tag);
void trx_recv_bf16(uint16_t *buf, int64_t n, int32_t peer, const int32_t *axes,
                   int32_t naxes, int32_t tag);
void trx_all_to_all_bf16(const uint16_t *send, int64_t n_per_rank,
                         uint16_t *recv, const int32_t *axes, int32_t naxes);

/* The ring shift of context parallelism (the compiled code's
 * trx_shift_start_f32 / trx_shift_wait): trx_shift_start starts sending
 * send[0..n-1] to position (pos + 1) mod p of the group of axes[0..naxes-1]
 * and receiving n elements into recv from position (pos - 1) mod p, in
 * `slot` (0..TRX_SHIFT_SLOTS-1), and returns without waiting for either
 * peer; trx_shift_wait_slot(slot) returns when recv holds the data and send
 * may be written again. Shifts in different slots may be in flight at once
 * (every member starts its shifts in the same order, as with send/recv);
 * neither buffer may be touched between the start and the wait. send and
 * recv must not overlap, except in a group of one, where the start copies
 * send to recv (nothing when they are the same buffer) and the wait has
 * nothing to do. MPI: MPI_Irecv and MPI_Isend at the start (pieces of at
 * most 1 GiB, like every transfer), MPI_Waitall at the wait; a message of a
 * different size aborts. Counted at the wait as one send and one recv of
 * n elements over the group's axis set (0 bytes for a group of one). A slot
 * out of range, a start of a slot in flight, a wait of a slot not started
 * and trx_dist_finalize with a slot in flight abort; the wait is watched by
 * the collective watchdog (trx_comm_set_timeout). */
void trx_shift_start(const float *send, float *recv, int64_t n,
                     const int32_t *axes, int32_t naxes, int32_t slot);
void trx_shift_wait_slot(int32_t slot);

/* A gradient bucket: bufs[0..nbufs-1] (counts[i] floats each) reduced in
 * place as one all_reduce of their concatenation (counted as one call of
 * the summed size). With the MPI transport it returns with the result in
 * place; with NCCL it is queued on the communication stream behind the
 * compute work so far, and trx_comm_wait_grads orders later compute work
 * after it. */
void trx_all_reduce_bucket(float *const *bufs, const int64_t *counts,
                           int32_t nbufs, int32_t op, const int32_t *axes,
                           int32_t naxes);
/* The same on bf16 gradient buffers (counts[i] bf16 elements each), reduced
 * as trx_all_reduce_bf16 reduces their concatenation. */
void trx_all_reduce_bucket_bf16(uint16_t *const *bufs, const int64_t *counts,
                                int32_t nbufs, int32_t op, const int32_t *axes,
                                int32_t naxes);
/* Compute work queued after this call runs after every gradient bucket
 * queued before it (the driver calls it before the optimizer step). A
 * no-op with the MPI transport or without the distributed runtime. */
void trx_comm_wait_grads(void);
/* A gradient region: the collectives and compiled kernels called between
 * begin and end may run behind the compute work queued before begin (with
 * NCCL: on the communication stream, while later compute work goes on);
 * trx_comm_wait_grads orders later compute work after them. Buffers the
 * region uses are not handed out again before its work is done. ZeRO-2
 * puts each gradient's reduce-scatter and the accumulation of its chunk in
 * one. No-ops with the MPI transport (everything runs in order) or without
 * the distributed runtime; regions do not nest. */
void trx_comm_grads_begin(void);
void trx_comm_grads_end(void);

/* Which transport moves the bytes (docs/cuda.md): "mpi" (the CPU
 * runtime's rings over MPI), "nccl" (registered by the CUDA runtime), or
 * "none" before trx_dist_init. The environment variable TRX_COMM=mpi|nccl
 * at trx_dist_init overrides the default (the registered one, else mpi). */
const char *trx_comm_transport_name(void);
/* One line about it, e.g. "nccl 2.28.9, world 1" (into buf, cut to len;
 * returns the full length). */
size_t trx_comm_describe(char *buf, size_t len);

/* Communication counters of this rank, per collective kind and axis set
 * (the unordered set: a bit mask, bit i = axis i). Bytes are the bytes this
 * rank actually handed to MPI as sender, counted in the ring loops, which
 * equal the ring algorithms' volumes; with B = n * element size and p the
 * group size, summed over the group's members:
 *   all_reduce      2(p-1) B        (per member 2(p-1)/p B when p divides n;
 *                                   otherwise 2B minus its chunks
 *                                   pos+1 and pos+2 (mod p), in bytes)
 *   all_gather      (p-1) * p * n_per_rank * size   (per member (p-1)/p of
 *   reduce_scatter  (p-1) * p * n_per_rank * size    the gathered/input size)
 *   broadcast       (p-1) B         (every member but the last of the chain,
 *                                   position root-1 mod p, sends B)
 *   send            B per call
 *   recv            B per call: bytes RECEIVED (a recv sends nothing)
 *   all_to_all      (p-1) * p * n_per_rank * size   (per member (p-1)/p of
 *                                   its send buffer: every chunk but the
 *                                   one it keeps)
 * (a ring shift counts as one send and one recv of its B, at its wait).
 * A group of one member sends nothing (0 bytes). Calls count every call,
 * including those over a group of one. Counters are atomic. */
enum trx_comm_kind {
  TRX_COMM_ALL_REDUCE = 0,
  TRX_COMM_ALL_GATHER = 1,
  TRX_COMM_REDUCE_SCATTER = 2,
  TRX_COMM_BROADCAST = 3,
  TRX_COMM_SEND = 4,
  TRX_COMM_RECV = 5,
  TRX_COMM_ALL_TO_ALL = 6,
  TRX_COMM_NKINDS = 7
};
#define TRX_COMM_ANY_KIND (-1) /* kind: sum over all kinds */
#define TRX_COMM_ANY_AXES 0u   /* axis_mask: sum over all axis sets */

/* Bytes and calls of `kind` (or TRX_COMM_ANY_KIND) over axis set
 * `axis_mask` (or TRX_COMM_ANY_AXES). 0 for an invalid kind or mask. */
uint64_t trx_comm_bytes(int32_t kind, uint32_t axis_mask);
uint64_t trx_comm_calls(int32_t kind, uint32_t axis_mask);
/* "all_reduce", "all_gather", "reduce_scatter", "broadcast", "send",
 * "recv", "all_to_all"; "invalid" otherwise. */
const char *trx_comm_kind_name(int32_t kind);
/* Sets every counter to 0. */
void trx_comm_reset_counters(void);

/* The collective watchdog: a collective, send, recv or ring-shift start or
 * wait of this process that has waited more than `seconds` (> 0; 0 turns it
 * off) prints "error: rank R: <call> over <axes> with ranks <group> at step
 * S has waited ..." (a shift: "with rank T (send) and rank F (recv)") and
 * ends the process (the launcher then ends the job). A thread checks every
 * 200 ms. trx_comm_set_step names the step in that message. */
void trx_comm_set_timeout(double seconds);
void trx_comm_set_step(int64_t step);
/* Prints this rank's counters as a table: one row per axis set that was
 * used (axes in mesh order), one column per kind, "bytes (calls)", and a
 * total row. See runtime/README.md for an example. */
void trx_comm_print_table(FILE *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TRIAX_RT_H */
