// Helpers of the metrics tests: scraping /metrics of a dev cluster and reading samples.
#pragma once

#include <optional>
#include <string>

#include "dev_cluster.h"

namespace gpucloud::testing {

/// A scrape: its HTTP status, Content-Type and body.
struct Scrape {
  int status = 0;
  std::string content_type;
  std::string body;
};

/// GET /metrics of base_url with a bearer token (none if "") and an Accept header (none if "").
Scrape scrape_metrics(const std::string& base_url, const std::string& token,
                      const std::string& accept = "");

/// The value of the sample whose line starts with `series` and a space, e.g.
/// `gpucloud_jobs{state="running",tenant="vision"}` (labels in the order the server writes
/// them: sorted by name); nullopt when there is no such line.
std::optional<double> sample(const std::string& text, const std::string& series);

/// A free TCP port on 127.0.0.1 (bound and released; for servers that cannot take port 0).
int free_port();

}  // namespace gpucloud::testing
