#include "http_server.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>

namespace server {

std::string HttpRequest::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr int64_t kNoDeadline = INT64_MAX;

MHD_Response* make_response(const HttpResponse& r) {
  MHD_Response* res =
      MHD_create_response_from_buffer(r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
  if (res == nullptr) return nullptr;
  if (!r.content_type.empty()) MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
  for (const auto& [name, value] : r.headers) MHD_add_response_header(res, name.c_str(), value.c_str());
  return res;
}

MHD_Result queue(MHD_Connection* c, const HttpResponse& r) {
  MHD_Response* res = make_response(r);
  if (res == nullptr) return MHD_NO;
  const MHD_Result ok = MHD_queue_response(c, static_cast<unsigned>(r.status), res);
  MHD_destroy_response(res);
  return ok;
}

HttpResponse plain_error(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.body = R"({"error":{"message":")" + message + R"(","type":"invalid_request_error","param":null,"code":null}})";
  return r;
}

std::string peer_address(MHD_Connection* c) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info == nullptr || info->client_addr == nullptr) return "";
  char buf[INET6_ADDRSTRLEN] = "";
  const sockaddr* sa = info->client_addr;
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  return buf;
}

}  // namespace

// One TCP connection: the deadline the reaper enforces (headers, then body), or none while a
// request is being answered.
struct HttpServer::Connection {
  std::atomic<int64_t> deadline_ms{kNoDeadline};
};

// One request on a connection, from its first access call to its completion.
struct RequestState {
  HttpRequest request;
  int host_lines = 0;
  bool spaced_name = false;  // a header name with whitespace before its colon
  bool too_large = false;
  bool handled = false;  // the handler ran
  std::shared_ptr<Exchange> exchange;
};

void Exchange::resume_locked() {
  if (suspended_ && connection_ != nullptr) {
    suspended_ = false;
    MHD_resume_connection(connection_);
  }
}

void Exchange::answer(HttpResponse response) {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_ || head_given_) return;
  answer_ = std::move(response);
  answer_.headers.insert(answer_.headers.end(), headers_.begin(), headers_.end());
  done_ = answered_ = true;
  resume_locked();
}

void Exchange::begin_stream(HttpResponse head) {
  std::lock_guard<std::mutex> lock(mu_);
  if (answered_ || dropped_ || head_given_) return;
  answer_ = std::move(head);
  answer_.headers.insert(answer_.headers.end(), headers_.begin(), headers_.end());
  head_given_ = true;
  resume_locked();
}

bool Exchange::write(const std::string& bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (gone_ || done_) return false;
  // A client that stops reading a stream would otherwise make the server buffer its answer.
  constexpr size_t kMaxUnsent = 4u << 20;
  if (pending_.size() + bytes.size() > kMaxUnsent) {
    gone_ = true;
    return false;
  }
  pending_ += bytes;
  resume_locked();
  return true;
}

void Exchange::end() {
  std::lock_guard<std::mutex> lock(mu_);
  done_ = true;
  resume_locked();
}

void Exchange::drop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (done_) return;
  done_ = true;
  dropped_ = true;
  resume_locked();
}

bool Exchange::client_gone() {
  std::lock_guard<std::mutex> lock(mu_);
  if (gone_) return true;
  if (fd_ < 0) return false;
  // A peer that closed (or reset) its side shows as RDHUP/HUP/ERR; data it still sends (a
  // pipelined request) does not count.
  pollfd p{fd_, POLLRDHUP, 0};
  if (poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) gone_ = true;
  return gone_;
}

struct HttpGlue {
  // Queues an answer and tells the status observer.
  static MHD_Result answer(HttpServer* self, MHD_Connection* c, const HttpResponse& r) {
    if (self->on_status_) self->on_status_(r.status);
    return queue(c, r);
  }

  static ssize_t read_stream(void* cls, uint64_t, char* buf, size_t max) {
    auto* ex = static_cast<std::shared_ptr<Exchange>*>(cls)->get();
    std::lock_guard<std::mutex> lock(ex->mu_);
    if (!ex->pending_.empty()) {
      const size_t n = std::min(max, ex->pending_.size());
      std::memcpy(buf, ex->pending_.data(), n);
      ex->pending_.erase(0, n);
      return static_cast<ssize_t>(n);
    }
    if (ex->done_) return MHD_CONTENT_READER_END_OF_STREAM;
    if (ex->gone_ || ex->connection_ == nullptr) return MHD_CONTENT_READER_END_WITH_ERROR;
    // Nothing to send yet: leave the event loop alone until the worker writes.
    ex->suspended_ = true;
    MHD_suspend_connection(ex->connection_);
    return 0;
  }

  static void free_stream(void* cls) { delete static_cast<std::shared_ptr<Exchange>*>(cls); }

  static MHD_Result collect_header(void* cls, MHD_ValueKind, const char* key, const char* value) {
    auto* state = static_cast<RequestState*>(cls);
    HttpRequest* req = &state->request;
    std::string name = key != nullptr ? key : "";
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (name.find_first_of(" \t") != std::string::npos) state->spaced_name = true;
    if (name == "host") ++state->host_lines;
    std::string& slot = req->headers[name];
    slot = slot.empty() ? std::string(value != nullptr ? value : "") : slot + ", " + (value != nullptr ? value : "");
    return MHD_YES;
  }

  static HttpServer::Connection* connection_of(MHD_Connection* c) {
    const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info != nullptr ? static_cast<HttpServer::Connection*>(info->socket_context) : nullptr;
  }

  static MHD_Result on_access(void* cls, MHD_Connection* c, const char* url, const char* method, const char* version,
                              const char* upload_data, size_t* upload_data_size, void** req_cls) {
    auto* self = static_cast<HttpServer*>(cls);
    auto* state = static_cast<RequestState*>(*req_cls);
    HttpServer::Connection* conn = connection_of(c);
    if (state == nullptr) {  // headers complete: first call
      state = new RequestState;
      *req_cls = state;
      ++self->active_;
      state->request.method = method;
      state->request.path = url;
      state->request.client = peer_address(c);
      MHD_get_connection_values(c, MHD_HEADER_KIND, collect_header, state);
      // RFC 9112 3.2 and 5.1: what a proxy in front may read otherwise ("Host : x" is no Host header here,
      // another's Host there) is a 400.
      if (state->spaced_name)
        return answer(self, c, plain_error(400, "a header name is followed by whitespace before its colon"));
      if (state->host_lines > 1) return answer(self, c, plain_error(400, "the request has more than one Host header"));
      if (state->host_lines == 0 && version != nullptr && std::strcmp(version, MHD_HTTP_VERSION_1_1) == 0)
        return answer(self, c, plain_error(400, "an HTTP/1.1 request needs a Host header"));
      size_t header_bytes = state->request.method.size() + state->request.path.size() + 12;
      for (const auto& [name, value] : state->request.headers) header_bytes += name.size() + value.size() + 4;
      if (header_bytes > self->limits_.max_header_bytes)
        return answer(self, c,
                      plain_error(431, "the request headers are larger than " +
                                           std::to_string(self->limits_.max_header_bytes) + " bytes"));
      const int64_t now = now_ms();
      if (conn != nullptr) {
        if (conn->deadline_ms.load() < now)
          return answer(self, c, plain_error(408, "the request headers took too long"));
        conn->deadline_ms = now + int64_t{self->limits_.body_timeout_s} * 1000;
      }
      const std::string length = state->request.header("content-length");
      if (!length.empty()) {
        // libmicrohttpd reads the first of repeated headers (collect_header joins them as "30, 5"),
        // while a proxy in front may read another: RFC 9112 6.3 calls that request smuggling and
        // asks for a 400. One value of digits only is accepted.
        if (length.find_first_not_of("0123456789") != std::string::npos)
          return answer(self, c, plain_error(400, "the Content-Length header must be one decimal number"));
        // libmicrohttpd has refused malformed and overflowing values already; refuse big ones
        // before reading a byte of the body.
        char* end = nullptr;
        const unsigned long long n = std::strtoull(length.c_str(), &end, 10);
        if (n > self->limits_.max_body_bytes)
          return answer(self, c,
                        plain_error(413, "the request body is larger than " +
                                             std::to_string(self->limits_.max_body_bytes) + " bytes"));
      }
      return MHD_YES;
    }
    if (*upload_data_size != 0) {
      // A body of unannounced size (chunked) that grows too large is dropped as it arrives (the
      // body deadline bounds how long) and answered 413 at its end.
      if (state->too_large || state->request.body.size() + *upload_data_size > self->limits_.max_body_bytes) {
        state->too_large = true;
        state->request.body.clear();
      } else {
        state->request.body.append(upload_data, *upload_data_size);
      }
      *upload_data_size = 0;
      return MHD_YES;
    }
    if (state->too_large && !state->handled) {
      state->handled = true;
      return answer(self, c,
                    plain_error(413, "the request body is larger than " + std::to_string(self->limits_.max_body_bytes) +
                                         " bytes"));
    }

    if (!state->handled) {  // body complete
      state->handled = true;
      if (conn != nullptr) conn->deadline_ms = kNoDeadline;
      HttpOutcome out;
      try {
        out = self->handler_(state->request);
      } catch (...) {
        out = HttpOutcome{};
        out.response = plain_error(500, "internal error");
      }
      if (out.kind == HttpOutcome::kNow || !out.exchange) return answer(self, c, out.response);
      state->exchange = out.exchange;
      Exchange* ex = out.exchange.get();
      std::lock_guard<std::mutex> lock(ex->mu_);
      ex->connection_ = c;
      const MHD_ConnectionInfo* fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
      ex->fd_ = fd != nullptr ? fd->connect_fd : -1;
      return serve_deferred(self, c, state->exchange);
    }
    // Called again after a deferred answer resumed the connection.
    if (state->exchange) {
      std::lock_guard<std::mutex> lock(state->exchange->mu_);
      return serve_deferred(self, c, state->exchange);
    }
    return MHD_YES;
  }

  // A deferred request, with its exchange's lock held: the stream's head or the answer once given,
  // else the connection waits suspended until the exchange resumes it. MHD_NO closes the connection.
  static MHD_Result serve_deferred(HttpServer* self, MHD_Connection* c, const std::shared_ptr<Exchange>& exchange) {
    Exchange* ex = exchange.get();
    if (ex->head_given_ && !ex->streamed_) {
      ex->streamed_ = true;
      const HttpResponse& head = ex->answer_;
      MHD_Response* res = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, read_stream,
                                                            new std::shared_ptr<Exchange>(exchange), free_stream);
      if (res == nullptr) return MHD_NO;
      if (!head.content_type.empty())
        MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE, head.content_type.c_str());
      for (const auto& [name, value] : head.headers) MHD_add_response_header(res, name.c_str(), value.c_str());
      if (self->on_status_) self->on_status_(head.status);
      const MHD_Result ok = MHD_queue_response(c, static_cast<unsigned>(head.status), res);
      MHD_destroy_response(res);
      return ok;
    }
    if (ex->answered_) return answer(self, c, ex->answer_);
    if (ex->dropped_) return MHD_NO;
    ex->suspended_ = true;
    MHD_suspend_connection(c);
    return MHD_YES;
  }

  static void on_completed(void* cls, MHD_Connection* c, void** req_cls, MHD_RequestTerminationCode) {
    auto* self = static_cast<HttpServer*>(cls);
    auto* state = static_cast<RequestState*>(*req_cls);
    if (state == nullptr) return;
    if (state->exchange) {
      std::lock_guard<std::mutex> lock(state->exchange->mu_);
      state->exchange->connection_ = nullptr;
      state->exchange->fd_ = -1;
      state->exchange->gone_ = true;
    }
    delete state;
    *req_cls = nullptr;
    --self->active_;
    // The next request on this connection gets a fresh header deadline.
    if (HttpServer::Connection* conn = connection_of(c))
      conn->deadline_ms = now_ms() + int64_t{self->limits_.header_timeout_s} * 1000;
  }

  static void on_connection(void* cls, MHD_Connection* c, void** socket_cls, MHD_ConnectionNotificationCode code) {
    auto* self = static_cast<HttpServer*>(cls);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      auto* conn = new HttpServer::Connection;
      conn->deadline_ms = now_ms() + int64_t{self->limits_.header_timeout_s} * 1000;
      *socket_cls = conn;
      const MHD_ConnectionInfo* info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
      const int fd = info != nullptr ? info->connect_fd : -1;
      std::lock_guard<std::mutex> lock(self->conn_mu_);
      // libmicrohttpd splits its own limit between the event loops; the exact total is kept here.
      if (self->connections_.size() >= self->limits_.max_connections && fd >= 0) {
        conn->deadline_ms = kNoDeadline;
        shutdown(fd, SHUT_RDWR);
      }
      self->connections_[conn] = fd;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
      auto* conn = static_cast<HttpServer::Connection*>(*socket_cls);
      if (conn == nullptr) return;
      {
        // Erased before libmicrohttpd closes the socket, so the reaper never touches a reused fd.
        std::lock_guard<std::mutex> lock(self->conn_mu_);
        self->connections_.erase(conn);
      }
      delete conn;
      *socket_cls = nullptr;
    }
  }
};

HttpServer::HttpServer(HttpLimits limits, Handler handler) : limits_(limits), handler_(std::move(handler)) {}

HttpServer::~HttpServer() { stop(); }

bool HttpServer::start(const std::string& host, int port, std::string* error) {
  sockaddr_storage addr{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  // poll(), not epoll: with epoll, MHD_quiesce_daemon (at SIGTERM) and an event thread both take the listen
  // socket out of that thread's epoll set, unsynchronised, and the loser aborts the process ("Failed to
  // remove listen FD from epoll set", libmicrohttpd 0.9.75 to 1.0). With poll() quiescing only sets a flag.
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME;
  // No MHD_USE_ERROR_LOG: every client that hangs up would write a line, a log flood on demand.
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    flags |= MHD_USE_IPv6;
  } else {
    *error = "--host must be a numeric IPv4 or IPv6 address, got '" + host + "'";
    return false;
  }
  // The per-connection memory pool holds the request line and headers and the read and write
  // buffers: it bounds the header bytes read; the exact limit is checked on the parsed headers.
  const size_t pool = std::max<size_t>(2 * limits_.max_header_bytes, 32 * 1024);
  daemon_ = MHD_start_daemon(flags, static_cast<uint16_t>(port), nullptr, nullptr,
                             reinterpret_cast<MHD_AccessHandlerCallback>(&HttpGlue::on_access), this,
                             MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr*>(&addr), MHD_OPTION_THREAD_POOL_SIZE,
                             limits_.event_threads, MHD_OPTION_CONNECTION_LIMIT,
                             limits_.max_connections * limits_.event_threads, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                             limits_.max_connections_per_client, MHD_OPTION_CONNECTION_TIMEOUT, limits_.idle_timeout_s,
                             MHD_OPTION_LISTEN_BACKLOG_SIZE, limits_.listen_backlog, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                             pool, MHD_OPTION_NOTIFY_COMPLETED, &HttpGlue::on_completed, this,
                             MHD_OPTION_NOTIFY_CONNECTION, &HttpGlue::on_connection, this, MHD_OPTION_END);
  if (daemon_ == nullptr) {
    *error = "cannot listen on " + host + ":" + std::to_string(port) + " (address in use or not local?)";
    return false;
  }
  reaper_ = std::thread([this] { reap_slow_clients(); });
  return true;
}

void HttpServer::reap_slow_clients() {
  std::unique_lock<std::mutex> lock(reaper_mu_);
  while (!stopping_) {
    reaper_cv_.wait_for(lock, std::chrono::milliseconds(250));
    const int64_t now = now_ms();
    std::lock_guard<std::mutex> conns(conn_mu_);
    for (auto& [conn, fd] : connections_) {
      if (fd >= 0 && conn->deadline_ms.load() < now) {
        // The event loop sees end-of-file and closes the connection itself.
        conn->deadline_ms = kNoDeadline;
        shutdown(fd, SHUT_RDWR);
      }
    }
  }
}

void HttpServer::stop_accepting() {
  if (daemon_ == nullptr) return;
  const MHD_socket fd = MHD_quiesce_daemon(daemon_);
  if (fd == MHD_INVALID_SOCKET) return;
  // Refuse new connections now; close the socket only after MHD_stop_daemon, which may still poll it.
  shutdown(fd, SHUT_RDWR);
  quiesced_fd_ = fd;
}

void HttpServer::stop() {
  if (daemon_ == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(reaper_mu_);
    stopping_ = true;
  }
  reaper_cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  MHD_stop_daemon(daemon_);
  daemon_ = nullptr;
  if (quiesced_fd_ >= 0) close(quiesced_fd_);
  quiesced_fd_ = -1;
}

}  // namespace server
