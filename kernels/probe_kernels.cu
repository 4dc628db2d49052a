#include "kernels/probe_kernels.cuh"

namespace wirewise::probe {
namespace {

constexpr int kUnroll = 4;  // independent 16-byte loads in flight per thread

__device__ __forceinline__ uint4 patternAt(size_t i, uint32_t seed) {
  const uint32_t lo = static_cast<uint32_t>(i), hi = static_cast<uint32_t>(i >> 32);
  const uint32_t x = (lo * 2654435761u) ^ (seed * 0x9e3779b9u) ^ hi;
  return make_uint4(x, lo ^ seed, x * 0x85ebca6bu + 1u, ~x ^ hi);
}

__device__ __forceinline__ unsigned long long globalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void copyKernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // Unrolled: issue all loads before any store so several requests per thread are in flight over the link.
  for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) dst[i + u * stride] = v[u];
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

__global__ void fillKernel(uint4* p, size_t n, uint32_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) p[i] = patternAt(i, seed);
}

__global__ void verifyKernel(const uint4* p, size_t n, uint32_t seed, unsigned long long* mismatches) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  unsigned long long bad = 0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint4 v = p[i], w = patternAt(i, seed);
    bad += (v.x != w.x || v.y != w.y || v.z != w.z || v.w != w.w) ? 1 : 0;
  }
  if (bad) atomicAdd(mismatches, bad);
}

__global__ void pingPongKernel(volatile uint32_t* localFlag, volatile uint32_t* peerFlag, int warmup, int iters,
                               bool initiator, unsigned long long timeoutNs, unsigned long long* result) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  unsigned long long start = globalTimerNs();
  for (int k = 0; k < warmup + iters; ++k) {
    if (k == warmup) start = globalTimerNs();
    const uint32_t send = initiator ? 2u * k + 1u : 2u * k + 2u;
    const uint32_t expect = initiator ? 2u * k + 2u : 2u * k + 1u;
    if (initiator) *peerFlag = send;
    // The wait is bounded: a peer that never answers (not launched, link gone) ends the kernel.
    const unsigned long long waitStart = globalTimerNs();
    while (*localFlag != expect) {
      if (globalTimerNs() - waitStart > timeoutNs) {
        result[0] = 0;
        result[1] = 1ull + k;
        return;
      }
    }
    if (!initiator) *peerFlag = send;
  }
  result[0] = globalTimerNs() - start;
  result[1] = 0;
}

int fillBlocks(size_t n) {
  const size_t want = (n + 255) / 256;
  return static_cast<int>(want < 4096 ? (want ? want : 1) : 4096);
}

}  // namespace

CopyGrid copyGrid(int device) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return CopyGrid{(sms > 0 ? sms : 80) * 4, 512};
}

cudaError_t launchCopy(const uint4* src, uint4* dst, size_t n, CopyGrid grid, cudaStream_t stream) {
  copyKernel<<<grid.blocks, grid.threads, 0, stream>>>(src, dst, n);
  return cudaGetLastError();
}

cudaError_t launchFill(uint4* p, size_t n, uint32_t seed, cudaStream_t stream) {
  fillKernel<<<fillBlocks(n), 256, 0, stream>>>(p, n, seed);
  return cudaGetLastError();
}

cudaError_t launchVerify(const uint4* p, size_t n, uint32_t seed, unsigned long long* mismatches, cudaStream_t stream) {
  verifyKernel<<<fillBlocks(n), 256, 0, stream>>>(p, n, seed, mismatches);
  return cudaGetLastError();
}

cudaError_t launchPingPong(volatile uint32_t* localFlag, volatile uint32_t* peerFlag, int warmup, int iters,
                           bool initiator, unsigned long long timeoutNs, unsigned long long* result,
                           cudaStream_t stream) {
  pingPongKernel<<<1, 1, 0, stream>>>(localFlag, peerFlag, warmup, iters, initiator, timeoutNs, result);
  return cudaGetLastError();
}

}  // namespace wirewise::probe
