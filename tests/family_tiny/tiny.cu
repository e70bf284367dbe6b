/*
 * tiny.cu - the test family's kernel: y[i] = a * x[i] + b, ITEMS
 * consecutive elements per thread, BLOCK threads per work-group (both
 * variant parameters, given as defines like any family's).
 */
extern "C" __global__ void __launch_bounds__(BLOCK) tiny_axpb(const tiny_params p) {
    const float *x = (const float *)p.x;
    float *y = (float *)p.y;
    const int base = ((int)blockIdx.x * BLOCK + (int)threadIdx.x) * ITEMS;
    for (int k = 0; k < ITEMS; k++) {
        const int i = base + k;
        if (i < p.n) y[i] = p.a * x[i] + p.b;
    }
}
