// Who may use the server from where: the Host header (DNS-rebinding protection), CORS and the API
// key. Pure functions of the request's headers, so they are unit-tested without a network.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace server {

struct AccessPolicy {
  std::string bound_host;                  // the --host address the server listens on
  std::vector<std::string> allowed_hosts;  // --allowed-host names, also accepted in Host
  std::string cors_origin;                 // --cors-origin; "" = no CORS headers at all
  std::string api_key;                     // "" = no key needed
};

// Whether a Host header value ("name", "name:port", "[v6]:port") names this server: the bound
// address, an --allowed-host name, "localhost" when bound to loopback, or any IP address when
// bound to all addresses. A name a page's DNS could point here (rebinding) is refused. An empty
// value (HTTP/1.0 without Host) is accepted: browsers always send Host.
bool host_allowed(const AccessPolicy& policy, const std::string& host_header);

// Whether an Authorization header carries "Bearer KEY" for the policy's key, compared in constant
// time for a given header length.
bool api_key_matches(const std::string& key, const std::string& authorization);

// Whether a Content-Type value is JSON ("application/json", parameters allowed).
bool is_json_content_type(const std::string& content_type);

// The Access-Control-Allow-Origin value for a request's Origin, or nullopt when CORS is off or the
// origin is not the configured one.
std::optional<std::string> cors_allow_origin(const AccessPolicy& policy, const std::string& origin);

// Reads an API key file (the first line, without its line end); nullopt with a message when it
// cannot be read or is empty.
std::optional<std::string> read_api_key_file(const std::string& path, std::string* error);

}  // namespace server
