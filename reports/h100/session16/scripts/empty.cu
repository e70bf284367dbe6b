// floors of a one-work-group kernel under Nsight Compute: nothing, and one cold load
__global__ void empty1(int *p) { if (threadIdx.x == 1000) p[0] = 1; }
__global__ void load192(const int *in, int *out) { int v = in[threadIdx.x]; __syncthreads(); out[threadIdx.x] = v + 1; }
__global__ void load192x2(const int *in, int *out) {
  int v = in[threadIdx.x]; __syncthreads(); int w = in[8192 + (v & 7) + threadIdx.x]; __syncthreads(); out[threadIdx.x] = w + 1; }
int main() {
  int *a; cudaMalloc(&a, 1 << 22); cudaMemset(a, 0, 1 << 22);
  for (int i = 0; i < 4; i++) { empty1<<<1, 32>>>(a); load192<<<1, 192>>>(a, a + 65536); load192x2<<<1, 192>>>(a, a + 65536); }
  cudaDeviceSynchronize(); return 0; }
