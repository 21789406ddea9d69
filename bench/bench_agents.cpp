// bench_agents: simulates N agents against a real `gpucloud server` over TLS, on one thread
// with Asio coroutines (not a thread per agent). Each agent registers, then on one keep-alive
// TLS connection alternates a heartbeat (a poll answered at once, carrying its status) and a
// long-poll the server holds for --interval, i.e. one heartbeat per interval per agent.
// Then it measures submit->running on a real remote `gpucloud agent`. Prints JSON last.
//
//   bench_agents [--agents N] [--duration SECONDS] [--interval SECONDS] [--jobs N]
//                [--running-jobs N] [--ramp-concurrency N] [--ramp-timeout SECONDS]
//                [--scrape-every-ms MS]
//
// The measuring window (--duration) opens only when every agent has registered and completed
// its first heartbeat; the ramp before it is reported apart (ramp_s, and CPU during it). At
// most --ramp-concurrency agents (default 256) handshake and register at the same time.
// With --running-jobs N, N CPU-only jobs are then submitted and the window opens once the
// simulated agents have started all of them (each agent reports what it was given as running,
// as a real agent does), so heartbeats are measured with that much work on the cluster.
//
// During the window the admin token scrapes the server's /metrics every --scrape-every-ms
// (default 1000; 0 = never), as Prometheus would: metrics_scrape_* are its answer times.
//
// Beast is used directly here: a benchmark is one translation unit outside the product.
// clang-format off
#include <utility>
// clang-format on
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

struct Stats {
  std::vector<double> latencies_ms;  // heartbeats inside the measurement window
  int64_t heartbeats = 0;
  int held = 0;   // agents registered
  int ready = 0;  // agents registered that have completed their first heartbeat
  int errors = 0;
  bool measuring = false;
  Clock::time_point stop = Clock::time_point::max();  // set when the window opens
  std::function<void()> on_ready;                     // called when an agent is ready
  int connecting = 0;    // agents between connect and register (bounded by the ramp limit)
  int ramp_limit = 256;  // at most this many handshakes+registrations in flight
  std::vector<std::function<void()>> ramp_waiters;
  int64_t started = 0;               // replicas the simulated agents have reported started
  std::function<void()> on_started;  // called after each
};

// The replicas one simulated agent was given: it "starts" each at once (a started event,
// then the key in every poll's running list), as a real agent reports its processes.
struct SimReplicas {
  std::set<std::string> running;
  json events = json::array();  // sent with every poll until the server acknowledges them
  int64_t seq = 0;

  /// Takes in a poll answer: drops acknowledged events, starts new allocations.
  void apply(const json& answer, Stats& stats) {
    int64_t acked = answer.value("acked_seq", int64_t{0});
    json left = json::array();
    for (auto& ev : events)
      if (ev["seq"].get<int64_t>() > acked) left.push_back(std::move(ev));
    events = std::move(left);
    auto allocations = answer.find("allocations");
    if (allocations == answer.end()) return;
    for (const auto& a : *allocations) {
      std::string key = a.value("key", "");
      if (key.empty() || !running.insert(key).second) continue;
      int64_t at = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
      events.push_back({{"seq", ++seq}, {"key", key}, {"type", "started"}, {"at", at}});
      ++stats.started;
      if (stats.on_started) stats.on_started();
    }
  }
};

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

double cpu_seconds_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(s.substr(close + 2));
  std::string f;
  std::vector<std::string> fields;
  while (rest >> f) fields.push_back(f);
  // fields[0] is state (field 3): utime is field 14, stime 15.
  return (std::stod(fields[11]) + std::stod(fields[12])) / sysconf(_SC_CLK_TCK);
}

int64_t rss_mib_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) / 1024;
  return 0;
}

double self_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

pid_t spawn(const std::vector<std::string>& argv, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::fopen(log.c_str(), "w");
    dup2(fileno(f), 1);
    dup2(fileno(f), 2);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  return pid;
}

using Stream = beast::ssl_stream<beast::tcp_stream>;

// JSON bodies are built outside the coroutines (g++ 12 rejects brace-initialised JSON with
// string literals inside a coroutine frame).
json register_body(int i) {
  json node = {{"name", "bench-" + std::to_string(i)},
               {"hostname", "bench"},
               {"gpus", json::array()},
               {"cpu_milli", 1000},
               {"memory_mib", 1024}};
  return {{"node", node}};
}

json poll_body(const std::string& node_id, int64_t version, int64_t hold_ms,
               const SimReplicas& replicas) {
  json running = json::array();
  for (const auto& key : replicas.running) running.push_back(key);
  return {{"node_id", node_id},        {"applied_version", version}, {"running", running},
          {"events", replicas.events}, {"logs", json::array()},      {"hold_ms", hold_ms}};
}

json job_body() {
  return {{"command", {"/bin/true"}}, {"gpus", 1}, {"workdir", "/tmp"}};
}

// A job for the simulated agents: no GPU (only the remote agent has one), a tenth of a CPU.
json running_job_body() {
  return {{"command", {"sleep", "infinity"}}, {"cpus", 0.1}, {"workdir", "/tmp"}};
}

asio::awaitable<json> call(Stream& s, beast::flat_buffer& buf, const std::string& target,
                           const std::string& token, const json& body) {
  http::request<http::string_body> req{http::verb::post, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::authorization, "Bearer " + token);
  req.set(http::field::content_type, "application/json");
  req.body() = body.dump();
  req.keep_alive(true);
  req.prepare_payload();
  co_await http::async_write(s, req, asio::use_awaitable);
  http::response<http::string_body> res;
  co_await http::async_read(s, buf, res, asio::use_awaitable);
  if (res.result_int() / 100 != 2) throw std::runtime_error(target + ": " + res.body());
  co_return json::parse(res.body());
}

asio::awaitable<void> agent(int i, tcp::endpoint ep, ssl::context& ctx, std::string token,
                            int interval_ms, Stats& stats) {
  auto ex = co_await asio::this_coro::executor;
  bool in_ramp = false;
  auto leave_ramp = [&] {
    if (!in_ramp) return;
    in_ramp = false;
    --stats.connecting;
    if (!stats.ramp_waiters.empty()) {
      auto next = std::move(stats.ramp_waiters.back());
      stats.ramp_waiters.pop_back();
      next();
    }
  };
  try {
    // The ramp: at most ramp_limit agents connect and register at once (as a real fleet that
    // comes up over some seconds would), so that the listen backlog does not overflow.
    if (stats.connecting >= stats.ramp_limit) {
      asio::steady_timer gate(ex, Clock::time_point::max());
      stats.ramp_waiters.push_back([&gate] { gate.cancel(); });
      boost::system::error_code ec;
      co_await gate.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (Clock::now() >= stats.stop) {     // the window is over: too late to join
      if (!stats.ramp_waiters.empty()) {  // pass the turn on, so every waiter ends
        auto next = std::move(stats.ramp_waiters.back());
        stats.ramp_waiters.pop_back();
        next();
      }
      co_return;
    }
    ++stats.connecting;
    in_ramp = true;
    Stream s(ex, ctx);
    co_await beast::get_lowest_layer(s).async_connect(ep, asio::use_awaitable);
    beast::get_lowest_layer(s).socket().set_option(tcp::no_delay(true));
    co_await s.async_handshake(ssl::stream_base::client, asio::use_awaitable);
    beast::flat_buffer buf;
    json reg_body = register_body(i);
    json reg = co_await call(s, buf, "/v1/agent/register", token, reg_body);
    std::string node_id = reg["node_id"], credential = reg["credential"];
    int64_t version = 0;
    ++stats.held;
    bool first = true;
    SimReplicas replicas;
    while (Clock::now() < stats.stop) {
      json hb = poll_body(node_id, version, 0, replicas);
      auto t0 = Clock::now();
      json r = co_await call(s, buf, "/v1/agent/poll", credential, hb);
      double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      version = r.value("version", version);
      replicas.apply(r, stats);
      if (first) {
        first = false;
        leave_ramp();
        ++stats.ready;
        if (stats.on_ready) stats.on_ready();
      } else if (stats.measuring) {
        stats.latencies_ms.push_back(ms);
        ++stats.heartbeats;
      }
      // The long-poll: held by the server until the interval ends or the allocations change.
      hb = poll_body(node_id, version, interval_ms, replicas);
      r = co_await call(s, buf, "/v1/agent/poll", credential, hb);
      version = r.value("version", version);
      replicas.apply(r, stats);
    }
  } catch (const std::exception& e) {
    if (++stats.errors <= 5) std::cerr << "agent " << i << ": " << e.what() << "\n";
    if (stats.on_ready) stats.on_ready();  // one fewer to wait for
  }
  leave_ramp();
}

// Submits jobs (running_job_body) on one keep-alive connection until `next` reaches `count`;
// several of these run at once, so submissions share the server's group commits.
asio::awaitable<void> submit_running_jobs(tcp::endpoint ep, ssl::context& ctx, std::string admin,
                                          int64_t count, int64_t& next, Stats& stats) {
  auto ex = co_await asio::this_coro::executor;
  Stream s(ex, ctx);
  beast::flat_buffer buf;
  json spec = running_job_body();
  try {
    co_await beast::get_lowest_layer(s).async_connect(ep, asio::use_awaitable);
    beast::get_lowest_layer(s).socket().set_option(tcp::no_delay(true));
    co_await s.async_handshake(ssl::stream_base::client, asio::use_awaitable);
    while (next < count) {
      ++next;
      co_await call(s, buf, "/v1/jobs", admin, spec);
    }
  } catch (const std::exception& e) {
    if (++stats.errors <= 5) std::cerr << "submit: " << e.what() << "\n";
  }
}

// Scrapes the server's /metrics every `every` while the window is open, as Prometheus would,
// on its own connection: how long each answer took and how large it was.
struct Scrapes {
  std::vector<double> ms;
  size_t bytes = 0;
  size_t series = 0;
};

asio::awaitable<void> scrape_metrics(tcp::endpoint ep, ssl::context& ctx, std::string token,
                                     std::chrono::milliseconds every, const Stats& stats,
                                     Scrapes& out) {
  auto ex = co_await asio::this_coro::executor;
  Stream s(ex, ctx);
  beast::flat_buffer buf;
  asio::steady_timer t(ex);
  try {
    co_await beast::get_lowest_layer(s).async_connect(ep, asio::use_awaitable);
    co_await s.async_handshake(ssl::stream_base::client, asio::use_awaitable);
    while (stats.measuring) {
      http::request<http::string_body> req{http::verb::get, "/metrics", 11};
      req.set(http::field::host, "127.0.0.1");
      req.set(http::field::authorization, "Bearer " + token);
      req.keep_alive(true);
      auto started = Clock::now();
      co_await http::async_write(s, req, asio::use_awaitable);
      http::response_parser<http::string_body> parser;
      parser.body_limit(256 << 20);
      co_await http::async_read(s, buf, parser, asio::use_awaitable);
      out.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - started).count());
      const std::string& body = parser.get().body();
      out.bytes = body.size();
      out.series = 0;
      for (size_t at = 0; at < body.size();) {
        size_t end = body.find('\n', at);
        if (end == std::string::npos) end = body.size();
        if (end > at && body[at] != '#') ++out.series;
        at = end + 1;
      }
      t.expires_after(every);
      co_await t.async_wait(asio::use_awaitable);
    }
  } catch (const std::exception& e) {
    std::cerr << "scrape: " << e.what() << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  int agents = 1000, duration_s = 30, interval_s = 5, jobs = 20, ramp_limit = 256,
      ramp_timeout_s = 300, running_jobs = 0, scrape_every_ms = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    int v = std::stoi(argv[i + 1]);
    if (a == "--agents")
      agents = v;
    else if (a == "--duration")
      duration_s = v;
    else if (a == "--interval")
      interval_s = v;
    else if (a == "--jobs")
      jobs = v;
    else if (a == "--ramp-concurrency")
      ramp_limit = std::max(1, v);
    else if (a == "--ramp-timeout")
      ramp_timeout_s = v;
    else if (a == "--scrape-every-ms")
      scrape_every_ms = v;
    else if (a == "--running-jobs")
      running_jobs = std::max(0, v);
    else
      return std::cerr << "unknown flag " << a << "\n", 2;
  }
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);  // children (the server) inherit it

  std::string dir =
      std::filesystem::temp_directory_path() / ("bench_agents." + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  pid_t server =
      spawn({GPUCLOUD_BINARY, "server", "--data-dir", dir + "/server", "--listen", "127.0.0.1:0",
             "--poll-hold", std::to_string(interval_s) + "s",
             // Every simulated agent connects from 127.0.0.1: the per-source cap (16 times this for
             // an address that nodes poll from) must hold all of them.
             "--max-connections-per-source", std::to_string(std::max(256, agents / 16 + 64)),
             "--unreachable-after", std::to_string(interval_s * 4) + "s", "--down-after",
             std::to_string(interval_s * 12) + "s"},
            dir + "/server.log");
  std::string address;
  for (int i = 0; i < 200 && address.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    address = read_line(dir + "/server/address");
  }
  if (address.empty()) return std::cerr << "server did not start; see " << dir << "\n", 1;
  std::string port = address.substr(address.rfind(':') + 1);
  std::string join = read_line(dir + "/server/agent.token");
  std::string admin = read_line(dir + "/server/admin.token");

  asio::io_context ioc(1);
  ssl::context ctx(ssl::context::tls_client);
  ctx.set_verify_mode(ssl::verify_none);  // the load generator trusts its own server
  tcp::endpoint ep(asio::ip::make_address("127.0.0.1"),
                   static_cast<unsigned short>(std::stoi(port)));
  Stats stats;
  stats.ramp_limit = ramp_limit;
  for (int i = 0; i < agents; ++i)
    asio::co_spawn(ioc, agent(i, ep, ctx, join, interval_s * 1000, stats), asio::detached);
  // The measuring window opens once every agent has registered and completed its first
  // heartbeat (the ramp is reported apart), or after --ramp-timeout whatever the count.
  auto ramp_start = Clock::now();
  double ramp_s = 0, server_cpu0 = 0, self_cpu0 = 0, ramp_server_cpu = 0, ramp_self_cpu = 0;
  int ready_at_open = 0;
  double server_cpu = 0, self_cpu = 0;
  int64_t rss = 0, rss_before_scrapes = 0;
  int held = 0;
  Scrapes scrapes;
  asio::steady_timer ramp_timeout(ioc, std::chrono::seconds(ramp_timeout_s));
  asio::steady_timer end_window(ioc, Clock::time_point::max());
  auto open_window = [&] {
    if (stats.measuring || stats.stop != Clock::time_point::max()) return;
    ramp_timeout.cancel();
    auto now = Clock::now();
    if (ramp_s == 0) ramp_s = std::chrono::duration<double>(now - ramp_start).count();
    ready_at_open = stats.ready;
    stats.measuring = true;
    server_cpu0 = cpu_seconds_of(server);
    self_cpu0 = self_cpu_seconds();
    ramp_server_cpu = server_cpu0;
    ramp_self_cpu = self_cpu0;
    std::cerr << "ramp: " << stats.ready << " agents ready after " << ramp_s << " s; measuring "
              << duration_s << " s\n";
    stats.stop = now + std::chrono::seconds(duration_s);
    rss_before_scrapes = rss_mib_of(server);
    if (scrape_every_ms > 0)
      asio::co_spawn(ioc,
                     scrape_metrics(ep, ctx, admin, std::chrono::milliseconds(scrape_every_ms),
                                    stats, scrapes),
                     asio::detached);
    end_window.expires_at(stats.stop - std::chrono::milliseconds(200));
    end_window.async_wait([&](auto) {
      stats.measuring = false;
      server_cpu = cpu_seconds_of(server) - server_cpu0;
      self_cpu = self_cpu_seconds() - self_cpu0;
      rss = rss_mib_of(server);
      held = stats.held - stats.errors;
    });
  };
  // With --running-jobs, the window waits until the agents have started all of them.
  int64_t submitted = 0;
  double submit_s = 0;
  bool submitting = false;
  stats.on_started = [&] {
    if (stats.started < running_jobs) return;
    submit_s = std::chrono::duration<double>(Clock::now() - ramp_start).count() - ramp_s;
    open_window();
  };
  stats.on_ready = [&] {
    if (stats.ready + stats.errors < agents) return;
    if (running_jobs == 0) return open_window();
    if (submitting) return;
    submitting = true;
    ramp_s = std::chrono::duration<double>(Clock::now() - ramp_start).count();
    std::cerr << "ramp: " << stats.ready << " agents ready; submitting " << running_jobs
              << " jobs\n";
    for (int k = 0; k < 16; ++k)
      asio::co_spawn(ioc, submit_running_jobs(ep, ctx, admin, running_jobs, submitted, stats),
                     asio::detached);
  };
  ramp_timeout.async_wait([&](boost::system::error_code ec) {
    if (!ec) open_window();
  });
  ioc.run();

  // Submit -> running on a remote agent (a real `gpucloud agent` process).
  std::vector<double> submit_ms;
  pid_t remote = -1;
  {
    // The agent pins the certificate's fingerprint, read from the server's banner.
    std::ifstream log(dir + "/server.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    size_t at = text.find("SHA256 ");
    std::string fp = at == std::string::npos ? "" : text.substr(at + 7, 95);
    remote = spawn({GPUCLOUD_BINARY, "agent", "--server", address, "--join-token", join,
                    "--fingerprint", fp, "--data-dir", dir + "/agent", "--name", "remote",
                    "--sim-gpus", "1xA100-80GB", "--poll-hold", std::to_string(interval_s) + "s"},
                   dir + "/agent.log");
    asio::io_context io2(1);
    asio::co_spawn(
        io2,
        [&]() -> asio::awaitable<void> {
          auto ex = co_await asio::this_coro::executor;
          Stream s(ex, ctx);
          co_await beast::get_lowest_layer(s).async_connect(ep, asio::use_awaitable);
          co_await s.async_handshake(ssl::stream_base::client, asio::use_awaitable);
          beast::flat_buffer buf;
          asio::steady_timer t(ex);
          for (int attempt = 0; attempt < 100; ++attempt) {  // wait for the remote node
            http::request<http::string_body> req{http::verb::get, "/v1/nodes", 11};
            req.set(http::field::authorization, "Bearer " + admin);
            req.keep_alive(true);
            co_await http::async_write(s, req, asio::use_awaitable);
            http::response<http::string_body> res;
            co_await http::async_read(s, buf, res, asio::use_awaitable);
            if (res.body().find("\"remote\"") != std::string::npos) break;
            t.expires_after(std::chrono::milliseconds(100));
            co_await t.async_wait(asio::use_awaitable);
          }
          t.expires_after(std::chrono::seconds(1));
          co_await t.async_wait(asio::use_awaitable);
          for (int j = 0; j < jobs; ++j) {
            json spec = job_body();
            http::request<http::string_body> req{http::verb::post, "/v1/jobs", 11};
            req.set(http::field::authorization, "Bearer " + admin);
            req.set(http::field::content_type, "application/json");
            req.body() = spec.dump();
            req.keep_alive(true);
            req.prepare_payload();
            co_await http::async_write(s, req, asio::use_awaitable);
            http::response<http::string_body> res;
            co_await http::async_read(s, buf, res, asio::use_awaitable);
            std::string id = json::parse(res.body()).value("id", "");
            for (int k = 0; k < 200; ++k) {  // until it has ended (started_at is then known)
              t.expires_after(std::chrono::milliseconds(20));
              co_await t.async_wait(asio::use_awaitable);
              http::request<http::string_body> get{http::verb::get, "/v1/jobs/" + id, 11};
              get.set(http::field::authorization, "Bearer " + admin);
              get.keep_alive(true);
              co_await http::async_write(s, get, asio::use_awaitable);
              http::response<http::string_body> r2;
              co_await http::async_read(s, buf, r2, asio::use_awaitable);
              json job = json::parse(r2.body());
              if (job.value("state", "") == "succeeded") {
                submit_ms.push_back(static_cast<double>(job.value("started_at_ms", int64_t{0}) -
                                                        job.value("created_at_ms", int64_t{0})));
                break;
              }
            }
          }
        },
        [](std::exception_ptr e) {
          if (e) try {
              std::rethrow_exception(e);
            } catch (const std::exception& x) {
              std::cerr << "submit: " << x.what() << "\n";
            }
        });
    io2.run();
  }
  kill(remote, SIGTERM);
  waitpid(remote, nullptr, 0);
  kill(server, SIGTERM);
  waitpid(server, nullptr, 0);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);

  json out = {{"agents", agents},
              {"agents_held", held},
              {"errors", stats.errors},
              {"window_s", duration_s},
              {"agents_ready_at_window", ready_at_open},
              {"ramp_s", ramp_s},
              {"ramp_server_cpu_pct", ramp_s > 0 ? 100 * ramp_server_cpu / (ramp_s + submit_s) : 0},
              {"ramp_loadgen_cpu_pct", ramp_s > 0 ? 100 * ramp_self_cpu / (ramp_s + submit_s) : 0},
              {"heartbeats_per_s", stats.heartbeats / static_cast<double>(duration_s)},
              {"heartbeat_p50_ms", percentile(stats.latencies_ms, 0.5)},
              {"heartbeat_p99_ms", percentile(stats.latencies_ms, 0.99)},
              {"server_cpu_pct", 100 * server_cpu / duration_s},
              {"server_rss_mib", rss},
              {"server_rss_mib_at_window_open", rss_before_scrapes},
              {"metrics_scrapes", scrapes.ms.size()},
              {"metrics_scrape_p50_ms", percentile(scrapes.ms, 0.5)},
              {"metrics_scrape_p99_ms", percentile(scrapes.ms, 0.99)},
              {"metrics_scrape_max_ms",
               scrapes.ms.empty() ? 0 : *std::max_element(scrapes.ms.begin(), scrapes.ms.end())},
              {"metrics_bytes", scrapes.bytes},
              {"metrics_series", scrapes.series},
              {"loadgen_cpu_pct", 100 * self_cpu / duration_s},
              {"open_files_limit", lim.rlim_cur},
              {"running_jobs", stats.started},
              {"running_jobs_start_s", submit_s},
              {"submit_to_running_p50_ms", percentile(submit_ms, 0.5)},
              {"submit_to_running_jobs", submit_ms.size()}};
  std::cout << out.dump() << std::endl;
  return 0;
}
