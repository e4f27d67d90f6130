/*
 * out = A @ x for a CSR matrix A (int64 indices, float32 values) and a dense
 * row-major x, with the arithmetic of PyTorch's CPU kernel
 * torch.sparse.mm(A, x, "sum") (aten/src/ATen/native/cpu/SpmmReduceKernel.cpp):
 * every output row starts at 0 and adds value * x[col] for its entries in
 * order as one fused multiply-add (fmaf, as PyTorch's vectorised kernel does on
 * CPUs with FMA), so the results are the same bit for bit. It skips
 * PyTorch's separate zero-filling pass and keeps a row's sums in registers.
 */
#include <stddef.h>
#include <math.h>
#include <stdint.h>

#define BLOCK 64

void csr_spmm_sum(const int64_t *restrict crow, const int64_t *restrict col, const float *restrict value,
                  const float *restrict x, float *restrict out, int64_t rows, int64_t width) {
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
                    for (int64_t k = 0; k < BLOCK; k++) acc[k] = fmaf(v, x_row[k], acc[k]);
                } else {
                    for (int64_t k = 0; k < count; k++) acc[k] = fmaf(v, x_row[k], acc[k]);
                }
            }
            for (int64_t k = 0; k < count; k++) out_row[start + k] = acc[k];
        }
    }
}

/*
 * out = A @ x with the arithmetic of PyG's message passing on an edge list:
 * the product value * x[col] is rounded on its own and then added
 * (scatter-add, acc = acc + p, in entry order from 0). The file is built
 * with -ffp-contract=off, so the compiler fuses nothing. For weighted
 * matrices (GCN's normalised adjacency) this differs from csr_spmm_sum's
 * fused multiply-adds in the last bit; for 0/1 values both are exact sums.
 */
void csr_spmm_sum_unfused(const int64_t *restrict crow, const int64_t *restrict col, const float *restrict value,
                          const float *restrict x, float *restrict out, int64_t rows, int64_t width) {
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
                    for (int64_t k = 0; k < BLOCK; k++) acc[k] = acc[k] + v * x_row[k];
                } else {
                    for (int64_t k = 0; k < count; k++) acc[k] = acc[k] + v * x_row[k];
                }
            }
            for (int64_t k = 0; k < count; k++) out_row[start + k] = acc[k];
        }
    }
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
