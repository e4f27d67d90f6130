/*
 * Dropout drawn from PyTorch's CPU generator state, bit for bit as
 * torch.rand(n, dtype=torch.float64) < q would draw it, without the float64
 * round trip: see fglcore/models/dropout.py for why this reproduces
 * F.dropout's masks. dropout_noise returns the noise tensor of F.dropout;
 * relu_dropout_forward/backward compute F.dropout(F.relu(h)) and its
 * gradient in one pass each.
 *
 * The generator is PyTorch's at::mt19937 (the 32-bit Mersenne Twister of
 * Matsumoto & Nishimura, 1998), whose state torch.get_rng_state() exports as
 * the legacy THGeneratorState: uint64 seed, int32 left, int32 seeded, uint64
 * next, uint64 state[624], ... . A double in [0, 1) takes two words, the
 * first as the high half of a 64-bit value whose low 53 bits m give
 * u = m * 2^-53 (at::uniform_real_distribution<double>). u < q holds exactly
 * when m < ceil(q * 2^53), so the comparison needs no floating point.
 *
 * The state is read from and written back to the exported buffer, which
 * Python then hands to torch.set_rng_state: the generator ends where
 * torch.rand would have left it.
 */
#include <stddef.h>
#include <stdint.h>

#define N 624
#define M 397
#define MATRIX_A 0x9908b0dfu
#define UPPER_MASK 0x80000000u
#define LOWER_MASK 0x7fffffffu
#define CHUNK_PAIRS 2048

typedef struct {
    uint64_t the_initial_seed;
    int32_t left;
    int32_t seeded;
    uint64_t next;
    uint64_t state[N];
} torch_generator_state;

static inline uint32_t twist(uint32_t u, uint32_t v) {
    return (((u & UPPER_MASK) | (v & LOWER_MASK)) >> 1) ^ ((v & 1u) ? MATRIX_A : 0u);
}

/* at::mt19937::next_state, written as three loops the compiler can vectorise. */
static void next_state(uint32_t *mt) {
    int i;
    for (i = 0; i < N - M; i++) mt[i] = mt[i + M] ^ twist(mt[i], mt[i + 1]);
    for (; i < N - 1; i++) mt[i] = mt[i + M - N] ^ twist(mt[i], mt[i + 1]);
    mt[N - 1] = mt[M - 1] ^ twist(mt[N - 1], mt[0]);
}

static inline uint32_t temper(uint32_t y) {
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= (y >> 18);
    return y;
}

/* count words of at::mt19937::operator(), which decrements left, twists when it reaches 0, then reads state[next++]. */
static void draw_words(uint32_t *mt, int32_t *left, uint64_t *next, uint32_t *out, size_t count) {
    size_t k = 0;
    while (k < count) {
        if (*left == 1) {
            next_state(mt);
            *left = N + 1;
            *next = 0;
        }
        size_t take = (size_t)(*left - 1);
        if (take > count - k) take = count - k;
        const uint32_t *src = mt + *next;
        for (size_t j = 0; j < take; j++) out[k + j] = temper(src[j]);
        *next += take;
        *left -= (int32_t)take;
        k += take;
    }
}

/* The generator's words as a stream: copied out of the exported state, and back when done. */
typedef struct {
    uint32_t mt[N];
    int32_t left;
    uint64_t next;
} mt_stream;

static int stream_open(mt_stream *stream, const unsigned char *generator_state) {
    const torch_generator_state *g = (const torch_generator_state *)generator_state;
    if (g->left < 1 || g->left > N + 1 || g->next > N) return -1;
    for (int i = 0; i < N; i++) stream->mt[i] = (uint32_t)g->state[i];
    stream->left = g->left;
    stream->next = g->next;
    return 0;
}

static void stream_close(const mt_stream *stream, unsigned char *generator_state) {
    torch_generator_state *g = (torch_generator_state *)generator_state;
    for (int i = 0; i < N; i++) g->state[i] = stream->mt[i];
    g->left = stream->left;
    g->next = stream->next;
}

/* keep[j] = whether the j-th double drawn is below q, for count <= CHUNK_PAIRS; threshold = ceil(q * 2^53). */
static void draw_keeps(mt_stream *stream, unsigned char *restrict keep, size_t count, uint64_t threshold) {
    uint32_t words[2 * CHUNK_PAIRS];
    const uint64_t mask53 = (1ull << 53) - 1;
    draw_words(stream->mt, &stream->left, &stream->next, words, 2 * count);
    for (size_t j = 0; j < count; j++)
        keep[j] = ((((uint64_t)words[2 * j] << 32) | words[2 * j + 1]) & mask53) < threshold;
}

/*
 * noise[i] = keep_value if the i-th double drawn is below q, else 0. Returns
 * 0, or -1 when the state is not one this code understands (then nothing is
 * written).
 */
int dropout_noise(unsigned char *generator_state, float *restrict noise, size_t n, uint64_t threshold,
                  float keep_value) {
    mt_stream stream;
    unsigned char keep[CHUNK_PAIRS];
    if (stream_open(&stream, generator_state) != 0) return -1;
    for (size_t start = 0; start < n; start += CHUNK_PAIRS) {
        size_t count = n - start < CHUNK_PAIRS ? n - start : CHUNK_PAIRS;
        float *restrict chunk = noise + start;
        draw_keeps(&stream, keep, count, threshold);
        for (size_t j = 0; j < count; j++) chunk[j] = keep[j] ? keep_value : 0.0f;
    }
    stream_close(&stream, generator_state);
    return 0;
}

/*
 * out = F.dropout(F.relu(h)) with F.dropout's mask: relu is ATen's
 * clamp_min(h, 0) (h < 0 ? 0 : h, NaN and -0 kept), then the product with
 * the noise keep_value or 0. code[i] records what the backward needs:
 * 0 where relu's output is <= 0 (its gradient is 0), else 1 (kept) or 2
 * (dropped: the gradient is grad * 0, a signed zero).
 */
int relu_dropout_forward(unsigned char *generator_state, const float *restrict h, float *restrict out,
                         unsigned char *restrict code, size_t n, uint64_t threshold, float keep_value) {
    mt_stream stream;
    unsigned char keep[CHUNK_PAIRS];
    if (stream_open(&stream, generator_state) != 0) return -1;
    for (size_t start = 0; start < n; start += CHUNK_PAIRS) {
        size_t count = n - start < CHUNK_PAIRS ? n - start : CHUNK_PAIRS;
        const float *restrict h_chunk = h + start;
        float *restrict out_chunk = out + start;
        unsigned char *restrict code_chunk = code + start;
        draw_keeps(&stream, keep, count, threshold);
        for (size_t j = 0; j < count; j++) {
            float r = h_chunk[j] < 0.0f ? 0.0f : h_chunk[j];
            out_chunk[j] = r * (keep[j] ? keep_value : 0.0f);
            code_chunk[j] = r <= 0.0f ? 0 : (unsigned char)(2 - keep[j]);
        }
    }
    stream_close(&stream, generator_state);
    return 0;
}

/* grad_h of relu_dropout_forward: threshold_backward(grad * noise, relu(h), 0), as autograd chains them. */
void relu_dropout_backward(const float *restrict grad, const unsigned char *restrict code, float *restrict grad_h,
                           size_t n, float keep_value) {
    for (size_t i = 0; i < n; i++) {
        float scaled = grad[i] * (code[i] == 1 ? keep_value : 0.0f);
        grad_h[i] = code[i] == 0 ? 0.0f : scaled;
    }
}
