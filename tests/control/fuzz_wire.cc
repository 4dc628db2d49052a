// libFuzzer target for the control-plane decoders: a FrameReader fed arbitrary bytes, keyed and not,
// and every message decoder on the payloads it yields (and on the raw input).
#include <cstddef>
#include <cstdint>

#include "control/wire.h"

#include <algorithm>
#include <vector>

using namespace wirewise::control;

namespace {
// decode(in) succeeds only for bytes that encode() gives back unchanged, and decode . encode is the identity.
template <class M>
bool canonical(std::span<const uint8_t> in) {
  M m;
  if (!decode(in, &m)) return true;
  const std::vector<uint8_t> out = encode(m);
  M again;
  return std::equal(in.begin(), in.end(), out.begin(), out.end()) && decode(out, &again) && again == m;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  for (int keyed = 0; keyed < 2; ++keyed) {
    FrameReader r;
    if (keyed) r.setKey(Digest{});
    size_t step = size > 0 ? 1 + data[0] % 64 : 1;
    for (size_t i = 0; i < size; i += step) {
      r.append(in.subspan(i, std::min(step, size - i)));
      Frame f;
      while (r.next(&f) == WireError::None) {
        Verdict v;
        Join j;
        Report rep;
        Hello h;
        Leave l;
        Propose pr;
        Answer an;
        (void)decode(f.payload, &pr);
        (void)decode(f.payload, &an);
        (void)decode(f.payload, &v);
        (void)decode(f.payload, &j);
        (void)decode(f.payload, &rep);
        (void)decode(f.payload, &h);
        (void)decode(f.payload, &l);
        std::vector<Report> batch;
        (void)decodeReports(f.payload, &batch);
      }
    }
  }
  // The message decoders directly (behind a MAC in real use, but they must hold on any bytes). Every
  // field list has one encoding per value, so what decodes re-encodes to the same bytes.
  if (!canonical<Join>(in) || !canonical<Report>(in) || !canonical<Leave>(in) || !canonical<Hello>(in) ||
      !canonical<Verdict>(in) || !canonical<Propose>(in) || !canonical<Answer>(in))
    __builtin_trap();
  std::vector<Report> batch;
  if (decodeReports(in, &batch)) {  // decode . pack . encode is the identity
    std::vector<std::vector<uint8_t>> enc;
    for (const Report& r : batch) enc.push_back(encode(r));
    std::vector<std::vector<uint8_t>> packed = packReports(enc);
    std::vector<Report> again;
    if (packed.size() != 1 || !decodeReports(packed[0], &again) || again != batch) __builtin_trap();
    if (!std::equal(in.begin(), in.end(), packed[0].begin(), packed[0].end())) __builtin_trap();
  }
  return 0;
}
