// The one header of src/net that includes Asio and Beast (never include it outside src/net).
#pragma once

// Boost 1.74's awaitable.hpp uses std::exchange without including <utility> (g++ 12, C++20),
// so <utility> must come first.
// clang-format off
#include <utility>
// clang-format on

#include <boost/asio.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace gpucloud::net {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
}  // namespace gpucloud::net
