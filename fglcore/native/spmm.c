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
