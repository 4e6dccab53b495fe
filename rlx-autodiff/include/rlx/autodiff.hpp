// autodiff.hpp: the rlx-autodiff umbrella header.
#pragma once

#include "rlx/autodiff/grad.hpp"
#include "rlx/autodiff/jvp.hpp"
#include "rlx/autodiff/transforms.hpp"
#include "rlx/autodiff/vjp_rules.hpp"
#include "rlx/autodiff/vmap.hpp"
