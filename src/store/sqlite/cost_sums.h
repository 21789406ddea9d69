// The sums a cost rollup row holds, in ms; shared by the code that writes rollups and the
// report that reads them.
#pragma once

#include <cstdint>

#include "store/sqlite/statement.h"
#include "store/state_store.h"

namespace gpucloud::store::sqlite {

/// What one rollup row sums: attempts, and GPU-thousandths × ms, USD per hour × ms, etc.
struct Sums {
  int64_t attempts = 0;
  int64_t gpu_milli_ms = 0;
  double usd_ms = 0;
  double on_demand_usd_ms = 0;
  int64_t idle_gpu_milli_ms = 0;
  double idle_usd_ms = 0;

  void add(const LedgerEntry& e) {
    const int64_t ms = e.ended_at - e.started_at;
    attempts += 1;
    gpu_milli_ms += e.gpu_milli * ms;
    usd_ms += e.usd_per_hour * static_cast<double>(ms);
    on_demand_usd_ms += e.on_demand_usd_per_hour * static_cast<double>(ms);
    idle_gpu_milli_ms += e.gpu_milli * e.idle_released_ms;
    idle_usd_ms += e.usd_per_hour * static_cast<double>(e.idle_released_ms);
  }
  void add(const Sums& s, int sign) {
    attempts += sign * s.attempts;
    gpu_milli_ms += sign * s.gpu_milli_ms;
    usd_ms += sign * s.usd_ms;
    on_demand_usd_ms += sign * s.on_demand_usd_ms;
    idle_gpu_milli_ms += sign * s.idle_gpu_milli_ms;
    idle_usd_ms += sign * s.idle_usd_ms;
  }
  // Binds the six sums from index `first` on.
  void bind(Statement& st, int first) const {
    st.bind(first, attempts);
    st.bind(first + 1, gpu_milli_ms);
    st.bind(first + 2, usd_ms);
    st.bind(first + 3, on_demand_usd_ms);
    st.bind(first + 4, idle_gpu_milli_ms);
    st.bind(first + 5, idle_usd_ms);
  }
  // Reads the six sums from column `first` on.
  static Sums read(Statement& st, int first) {
    return {st.integer(first),  st.integer(first + 1), st.real(first + 2),
            st.real(first + 3), st.integer(first + 4), st.real(first + 5)};
  }
};

}  // namespace gpucloud::store::sqlite
