// The reference chat page the HTTP source serves at GET /ui when its config sets `ui: true`
// (connectors/http/ui/chat.html, embedded at build time by CMake: ui_page.cc.in). It is one
// self-contained HTML document (no external script, style or font), served with a Content-
// Security-Policy that lets it talk to this server only.
#pragma once

#include <string_view>

#include "connectors/http/http_response.h"

namespace sluice::http {

// The page's text.
std::string_view ui_page_html();
// 200 text/html with the page and its security headers.
HttpResponse ui_page_response();

}  // namespace sluice::http
