// The only way a symbol leaves libnccl-tuner-wirewise.so (with exports.map as the second lock).
#pragma once

#define WW_EXPORT __attribute__((visibility("default")))

// The name NCCL prints in its logs for every face of the library.
#define WW_PLUGIN_NAME "wirewise"
