// RMS norm and rotary embeddings.

#define NORM_THREADS 256

// out[i] = x[rows ? rows[i] : i] / sqrt(mean(x^2) + eps) * w; x: [*, d] float32. The sum of squares in
// float64: each thread's elements in order, then one fixed tree over the threads
extern "C" __global__ void rms_norm(const float* __restrict__ x, const int* __restrict__ rows, const float* __restrict__ w,
                                    float* __restrict__ out, int d, float eps) {
    __shared__ double part[NORM_THREADS];
    int i = blockIdx.x, tid = threadIdx.x;
    const float* v = x + (long)(rows ? rows[i] : i) * d;
    double s = 0.0;
    for (int j = tid; j < d; j += NORM_THREADS) s = __dadd_rn(s, __dmul_rn((double)v[j], (double)v[j]));
    part[tid] = s;
    __syncthreads();
    for (int step = NORM_THREADS / 2; step > 0; step >>= 1) {
        if (tid < step) part[tid] = __dadd_rn(part[tid], part[tid + step]);
        __syncthreads();
    }
    float scale = (float)(1.0 / sqrt(part[0] / d + (double)eps));
    for (int j = tid; j < d; j += NORM_THREADS) out[(long)i * d + j] = __fmul_rn(__fmul_rn(v[j], scale), w[j]);
}

// x: [n, heads, head_dim] float32, in place: pairs of the first n_dims of each head rotated by
// position * scale * base^(-2k / n_dims) / factors[k]; adjacent pairs (2k, 2k + 1), or with neox (k, k + n_dims / 2)
extern "C" __global__ void rope(float* __restrict__ x, const int* __restrict__ positions, int n, int heads, int head_dim,
                                int n_dims, double base, double scale, const float* __restrict__ factors, int neox) {
    int half = n_dims / 2;
    long job = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (job >= (long)n * heads * half) return;
    int k = job % half;
    long head = job / half;  // i * heads + h
    int i = head / heads;
    double theta = (double)positions[i] * scale * pow(base, -2.0 * k / n_dims);
    if (factors) theta /= (double)factors[k];
    double c = cos(theta), s = sin(theta);
    float* v = x + head * head_dim;
    int a = neox ? k : 2 * k, b = neox ? k + half : 2 * k + 1;
    double x0 = v[a], x1 = v[b];
    v[a] = (float)(x0 * c - x1 * s);
    v[b] = (float)(x0 * s + x1 * c);
}
