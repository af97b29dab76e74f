// The dataplane's names for the shared token bucket (base/token_bucket.h).
#pragma once

#include "base/token_bucket.h"

namespace gw::dp {

using base::TokenBucket;
using base::TokenBucketState;
namespace token_bucket = base::token_bucket;

}  // namespace gw::dp
