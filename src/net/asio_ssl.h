// Asio's and Beast's TLS streams (OpenSSL), for the few files of src/net that speak TLS.
#pragma once

#include "net/asio.h"
// after asio.h, which includes <utility> first
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>

namespace gpucloud::net {
namespace ssl = boost::asio::ssl;
using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;
}  // namespace gpucloud::net
