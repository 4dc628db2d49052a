// The probe's kernels and their launch helpers (CUDA only; included by the .cu files).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace wirewise::probe {

// Bytes per element of every copy: one 16-byte vector load/store per thread per step.
constexpr size_t kVecBytes = sizeof(uint4);

// Grid for the copy kernels: enough blocks to keep every SM busy with loads in flight over the link.
struct CopyGrid {
  int blocks = 0, threads = 0;
};
CopyGrid copyGrid(int device);

// dst[i] = src[i] for n uint4 elements; src and dst may be on different GPUs (peer pointers).
cudaError_t launchCopy(const uint4* src, uint4* dst, size_t n, CopyGrid grid, cudaStream_t stream);
// p[i] = pattern(i, seed): every element distinct and seed-dependent, so a copy from the wrong GPU or an
// offset copy fails verification.
cudaError_t launchFill(uint4* p, size_t n, uint32_t seed, cudaStream_t stream);
// Adds the number of elements that differ from pattern(i, seed) to *mismatches (device memory).
cudaError_t launchVerify(const uint4* p, size_t n, uint32_t seed, unsigned long long* mismatches, cudaStream_t stream);

// One side of the ping-pong: a single thread that, for warmup + iters rounds, writes the peer's flag and
// waits for its own (the initiator writes first). Round k: the initiator writes 2k+1 to the peer and waits
// for 2k+2; the responder waits for 2k+1 and writes 2k+2. result[0] = ns (globaltimer) for the timed
// rounds, result[1] = 0 on success or 1 + the round at which a wait exceeded timeoutNs.
cudaError_t launchPingPong(volatile uint32_t* localFlag, volatile uint32_t* peerFlag, int warmup, int iters,
                           bool initiator, unsigned long long timeoutNs, unsigned long long* result,
                           cudaStream_t stream);

}  // namespace wirewise::probe
