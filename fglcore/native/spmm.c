/*
 * out = A @ x (+ row_term) (+ bias) for a CSR matrix A (int64 indices,
 * float32 values), a dense row-major x, and optional terms added to the
 * finished sums: row_term (rows x width, e.g. GIN's own x) and bias (width,
 * e.g. GCN's bias), each in one more rounding, in that order, as the
 * separate additions that follow a PyG aggregation would round them; NULL
 * leaves a term out. Every output row starts at 0 and adds value * x[col]
 * for its entries in order, keeping a row's sums in registers; the two
 * exported products differ only in how one term is added:
 *
 * - csr_spmm_sum: as one fused multiply-add (fmaf), the arithmetic of
 *   PyTorch's CPU kernel torch.sparse.mm(A, x, "sum")
 *   (aten/src/ATen/native/cpu/SpmmReduceKernel.cpp, vectorised with FMA),
 *   bit for bit, without its separate zero-filling pass;
 * - csr_spmm_sum_unfused: the product rounded on its own, then added
 *   (acc = acc + p), the arithmetic of PyG's message passing on an edge list
 *   (scatter-add of value * x[source] in edge order). The file is built with
 *   -ffp-contract=off, so the compiler fuses nothing here.
 *
 * For 0/1 values both are the same exact sums; for weighted matrices (GCN's
 * normalised adjacency) they differ in the last bit.
 */
#include <stddef.h>
#include <math.h>
#include <stdint.h>

#define BLOCK 64

static inline float add_term(float acc, float v, float x, int fused) { return fused ? fmaf(v, x, acc) : acc + v * x; }

static inline void csr_spmm(const int64_t *restrict crow, const int64_t *restrict col, const float *restrict value,
                            const float *restrict x, const float *restrict row_term, const float *restrict bias,
                            float *restrict out, int64_t rows, int64_t width, int fused) {
    for (int64_t i = 0; i < rows; i++) {
        float *restrict out_row = out + i * width;
        for (int64_t start = 0; start < width; start += BLOCK) {
            int64_t count = width - start < BLOCK ? width - start : BLOCK;
            float acc[BLOCK];
            for (int64_t k = 0; k < BLOCK; k++) acc[k] = 0.0f;
            for (int64_t e = crow[i]; e < crow[i + 1]; e++) {
                const float *restrict x_row = x + col[e] * width + start;
                const float v = value[e];
                if (count == BLOCK) {
                    for (int64_t k = 0; k < BLOCK; k++) acc[k] = add_term(acc[k], v, x_row[k], fused);
                } else {
                    for (int64_t k = 0; k < count; k++) acc[k] = add_term(acc[k], v, x_row[k], fused);
                }
            }
            if (row_term) {
                const float *restrict term_row = row_term + i * width + start;
                for (int64_t k = 0; k < count; k++) acc[k] = acc[k] + term_row[k];
            }
            if (bias) {
                for (int64_t k = 0; k < count; k++) acc[k] = acc[k] + bias[start + k];
            }
            for (int64_t k = 0; k < count; k++) out_row[start + k] = acc[k];
        }
    }
}

void csr_spmm_sum(const int64_t *restrict crow, const int64_t *restrict col, const float *restrict value,
                  const float *restrict x, const float *restrict row_term, const float *restrict bias,
                  float *restrict out, int64_t rows, int64_t width) {
    csr_spmm(crow, col, value, x, row_term, bias, out, rows, width, 1);
}

void csr_spmm_sum_unfused(const int64_t *restrict crow, const int64_t *restrict col, const float *restrict value,
                          const float *restrict x, const float *restrict row_term, const float *restrict bias,
                          float *restrict out, int64_t rows, int64_t width) {
    csr_spmm(crow, col, value, x, row_term, bias, out, rows, width, 0);
}

/*
 * out = in^T for a row-major rows x cols float32 matrix (PyTorch's
 * in.t().contiguous()), copied as 32-bit words in square tiles so that both
 * sides stay in cache. The sparse first layers multiply by a weight's
 * transpose on every step (fglcore/models/sparse_input.py).
 */
#define TILE 16

void transpose_f32(const uint32_t *restrict in, uint32_t *restrict out, int64_t rows, int64_t cols) {
    for (int64_t r0 = 0; r0 < rows; r0 += TILE) {
        int64_t r1 = r0 + TILE < rows ? r0 + TILE : rows;
        for (int64_t c0 = 0; c0 < cols; c0 += TILE) {
            int64_t c1 = c0 + TILE < cols ? c0 + TILE : cols;
            for (int64_t c = c0; c < c1; c++)
                for (int64_t r = r0; r < r1; r++) out[c * rows + r] = in[r * cols + c];
        }
    }
}
