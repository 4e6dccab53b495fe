// runtime.hpp: the whole public API of rlx-runtime in one include.
#pragma once

#include "rlx/runtime/backend_registry.hpp"
#include "rlx/runtime/checkpoint.hpp"
#include "rlx/runtime/compile_cache.hpp"
#include "rlx/runtime/device.hpp"
#include "rlx/runtime/executable.hpp"
#include "rlx/runtime/hf_config.hpp"
#include "rlx/runtime/init.hpp"
#include "rlx/runtime/models.hpp"
#include "rlx/runtime/npy.hpp"
#include "rlx/runtime/safetensors.hpp"
#include "rlx/runtime/session.hpp"
#include "rlx/runtime/stats.hpp"
