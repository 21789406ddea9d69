// `gpucloud server`: the control plane alone, for a cluster of agents on other machines.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cli/daemon.h"
#include "common/units.h"
#include "server/server.h"

namespace gpucloud::cli {

namespace {

int usage(const std::string& message) {
  std::cerr << "error: " << message << "\n";
  return kExitUsage;
}

Result<server::ServerConfig> server_config_from(const ServerOptions& o) {
  auto listen = parse_listen(o.listen);
  if (!listen) return listen.error();
  server::ServerConfig config;
  config.data_dir = o.data_dir;
  config.listen_host = listen->first;
  config.listen_port = listen->second;
  config.policy = o.policy;
  auto queue = queue_settings_from(o.queue);
  if (!queue) return queue.error();
  config.queue = *queue;
  config.config_file = o.config_file;
  config.catalog_file = o.catalog_file;
  config.tls = !o.plain_http;
  config.tls_cert_file = o.tls_cert;
  config.tls_key_file = o.tls_key;
  config.max_connections = o.max_connections;
  config.max_connections_per_source = o.max_connections_per_source;
  config.metrics_token_file = o.metrics_token_file;
  config.metrics_public = o.metrics_public;
  if (o.plain_http && (!o.tls_cert.empty() || !o.tls_key.empty()))
    return invalid("--plain-http and --tls-cert/--tls-key exclude each other; choose one");
  if (o.tls_cert.empty() != o.tls_key.empty())
    return invalid(
        "give both --tls-cert FILE and --tls-key FILE, or neither (the server then "
        "makes a self-signed certificate in its data dir)");
  auto hold = parse_duration_ms(o.poll_hold);
  if (!hold || *hold < 100 || *hold > 60'000)
    return invalid(
        fmt::format("--poll-hold '{}' must be a duration within 100ms..60s", o.poll_hold));
  config.poll_hold_ms = *hold;
  auto unreachable = parse_duration_ms(o.unreachable_after);
  auto down = parse_duration_ms(o.down_after);
  if (!unreachable || !down || *unreachable < 1000 || *down <= *unreachable)
    return invalid(
        fmt::format("--unreachable-after '{}' and --down-after '{}' must be durations with 1s <= "
                    "unreachable-after < down-after",
                    o.unreachable_after, o.down_after));
  config.unreachable_after_ms = *unreachable;
  config.down_after_ms = *down;
  return config;
}

}  // namespace

int cmd_server(const ServerOptions& o) {
  auto config = server_config_from(o);
  if (!config) return usage(config.error().message);
  SignalWaiter signals;  // before any thread starts
  SystemClock clock;
  net::EventLoop loop;
  auto server = server::Server::create(*config, clock, loop);
  if (!server) return fail(server.error().message);
  auto port = (*server)->start();
  if (!port) return fail(port.error().message);
  const auto& s = **server;
  std::string trust = s.tls_fingerprint().empty()
                          ? "  TLS:          off (--plain-http): use only on a trusted network\n"
                          : fmt::format("  certificate:  {}\n  fingerprint:  SHA256 {}\n",
                                        s.tls_cert_file(), s.tls_fingerprint());
  std::string pin =
      s.tls_fingerprint().empty() ? "" : fmt::format(" --fingerprint {}", s.tls_fingerprint());
  std::cout << fmt::format(
                   "gpucloud server is running\n"
                   "  API:          {}\n"
                   "{}"
                   "  admin token:  {}\n"
                   "  data dir:     {}\n"
                   "  node timeouts: unreachable after {}, down after {}\n"
                   "\n"
                   "Join a machine (make a join token with `gpucloud token create --role agent`,\n"
                   "save it to a file readable only by root on the machine):\n"
                   "  gpucloud agent --server {}{} --join-token-file TOKEN_FILE\n",
                   s.url(), trust, s.layout().admin_token(), o.data_dir,
                   format_duration_ms(config->unreachable_after_ms),
                   format_duration_ms(config->down_after_ms), s.url(), pin)
            << std::flush;
  std::thread loop_thread([&] { loop.run(); });
  int sig =
      signals.wait([&, srv = server->get()] { loop.post([srv] { (void)srv->reload_config(); }); });
  spdlog::info("received signal {}; stopping", sig);
  loop.stop();
  loop_thread.join();
  return 0;
}

}  // namespace gpucloud::cli
