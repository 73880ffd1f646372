// Reading and writing fabric graphs (fabric_graph.h). The files are parsed
// by Boost.Graph's GraphML and Graphviz readers into string properties; this
// file then checks and converts every value itself, so that a value of any
// declared GraphML type (networkx writes "long" for integers) is accepted
// and every bad one is named.
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphml.hpp>
#include <boost/graph/graphviz.hpp>
#include <cmath>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>

#include "shardsim/core/error.h"
#include "shardsim/core/read_file.h"
#include "shardsim/topology/fabric_graph.h"

namespace shardsim {
namespace {

struct VertexProps {
  std::string node_id, kind, rank, transit, coord;
};
struct EdgeProps {
  std::string bw, latency, link;
};

template <typename Graph>
Graph read_boost(const std::string& text, const std::string& name, bool graphml) {
  Graph g;
  boost::dynamic_properties dp(boost::ignore_other_properties);
  dp.property("kind", boost::get(&VertexProps::kind, g));
  dp.property("rank", boost::get(&VertexProps::rank, g));
  dp.property("transit", boost::get(&VertexProps::transit, g));
  dp.property("coord", boost::get(&VertexProps::coord, g));
  dp.property("bw_GBps", boost::get(&EdgeProps::bw, g));
  dp.property("latency_ns", boost::get(&EdgeProps::latency, g));
  dp.property("link", boost::get(&EdgeProps::link, g));
  try {
    if (graphml) {
      // Every value as text: this file converts and checks them (see top).
      static const std::regex kType(R"re(attr\.type\s*=\s*"[A-Za-z]+")re");
      std::istringstream in(std::regex_replace(text, kType, "attr.type=\"string\""));
      boost::read_graphml(in, g, dp);
    } else {
      dp.property("node_id", boost::get(&VertexProps::node_id, g));
      if (!boost::read_graphviz(text, g, dp, "node_id")) throw InputError(name, "/", "not a Graphviz DOT graph");
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
    throw InputError(name, "/", std::string("not a readable ") + (graphml ? "GraphML" : "DOT") + " graph: " + what);
  }
  return g;
}

double number(const std::string& v, const std::string& name, const std::string& where, const char* attr,
              double fallback, bool positive) {
  if (v.empty()) {
    if (fallback < 0) throw InputError(name, where + "/" + attr, "missing: expected a number");
    return fallback;
  }
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0' || !std::isfinite(x) || x < 0 || (positive && x == 0)) {
    throw InputError(
        name, where + "/" + attr,
        std::string("expected a ") + (positive ? "positive" : "non-negative") + " number, got \"" + v + "\"");
  }
  return x;
}

LinkKind link_kind(const std::string& v, const std::string& name, const std::string& where) {
  for (int k = 0; k < kLinkKinds; ++k) {
    if (v == to_string(static_cast<LinkKind>(k))) return static_cast<LinkKind>(k);
  }
  throw InputError(name, where + "/link", "expected nvlink, nic, switch or ici, got \"" + v + "\"");
}

bool is_device_kind(const std::string& k) {
  return k == "gpu" || k == "tpu" || k == "cpu" || k == "device";
}

template <typename Graph>
FabricGraph convert(const Graph& bg, const std::string& name, bool graphml, bool directed) {
  FabricGraph g;
  const auto n = boost::num_vertices(bg);
  g.nodes.resize(n);
  for (size_t v = 0; v < n; ++v) {
    const VertexProps& p = bg[v];
    FabricGraph::Node& node = g.nodes[v];
    // Boost's GraphML reader keeps no node ids: such nodes are named by index.
    node.id = graphml ? "node " + std::to_string(v) : p.node_id;
    const std::string where = "/nodes/" + (graphml ? std::to_string(v) : p.node_id);
    if (p.kind.empty())
      throw InputError(name, where + "/kind", "missing: expected gpu, tpu, cpu, device or a switch kind");
    node.kind = p.kind;
    node.device = is_device_kind(p.kind);
    if (node.device) {
      char* end = nullptr;
      const long long r = std::strtoll(p.rank.c_str(), &end, 10);
      if (p.rank.empty() || *end != '\0' || r < 0) {
        throw InputError(name, where + "/rank",
                         "expected the device's rank, an integer from 0, got \"" + p.rank + "\"");
      }
      node.rank = r;
      if (!p.transit.empty() && p.transit != "true" && p.transit != "false" && p.transit != "1" && p.transit != "0") {
        throw InputError(name, where + "/transit", "expected true or false, got \"" + p.transit + "\"");
      }
      node.transit = p.transit == "true" || p.transit == "1";
      // "x,y,z": non-negative integers.
      for (size_t at = 0; !p.coord.empty() && at <= p.coord.size();) {
        const size_t comma = std::min(p.coord.find(',', at), p.coord.size());
        const std::string part = p.coord.substr(at, comma - at);
        char* cend = nullptr;
        const long long c = std::strtoll(part.c_str(), &cend, 10);
        if (part.empty() || *cend != '\0' || c < 0 || c > (1 << 24) || node.coord.size() >= 6) {
          throw InputError(name, where + "/coord",
                           "expected up to 6 non-negative integers separated by commas, got \"" + p.coord + "\"");
        }
        node.coord.push_back(c);
        at = comma + 1;
      }
    } else if (!p.rank.empty() || !p.coord.empty()) {
      throw InputError(name, where + (p.rank.empty() ? "/coord" : "/rank"),
                       "a " + p.kind + " is not a device and has no " + (p.rank.empty() ? "coord" : "rank"));
    }
  }
  size_t index = 0;
  for (auto [it, end] = boost::edges(bg); it != end; ++it, ++index) {
    const EdgeProps& p = bg[*it];
    const auto a = static_cast<uint32_t>(boost::source(*it, bg));
    const auto b = static_cast<uint32_t>(boost::target(*it, bg));
    const std::string where = "/edges/" + std::to_string(index);
    if (a == b) throw InputError(name, where, "a link from a node to itself");
    FabricGraph::Link l;
    l.from = a;
    l.to = b;
    l.bandwidth_GBps = number(p.bw, name, where, "bw_GBps", -1, true);
    l.latency_ns = number(p.latency, name, where, "latency_ns", 0, false);
    l.kind = p.link.empty() ? LinkKind::kSwitch : link_kind(p.link, name, where);
    g.links.push_back(l);
    if (!directed) {
      std::swap(l.from, l.to);
      g.links.push_back(l);
    }
  }
  return g;
}

using Directed = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, VertexProps, EdgeProps>;
using Undirected = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, VertexProps, EdgeProps>;

}  // namespace

int64_t FabricGraph::devices() const {
  int64_t n = 0;
  for (const Node& v : nodes) n += v.device ? 1 : 0;
  return n;
}

FabricGraph parse_fabric_graph(const std::string& text, const std::string& name) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw InputError(name, "/", "empty: expected a GraphML or DOT graph");
  const bool graphml = text[first] == '<';
  bool directed = false;
  if (graphml) {
    directed = std::regex_search(text, std::regex(R"re(edgedefault\s*=\s*"directed")re"));
  } else {
    static const std::regex kHead(R"re(^\s*(strict\s+)?(di)?graph\b)re", std::regex::icase);
    std::smatch m;
    if (!std::regex_search(text, m, kHead)) throw InputError(name, "/", "expected a GraphML or DOT graph");
    directed = m[2].matched;
  }
  FabricGraph g = directed ? convert(read_boost<Directed>(text, name, graphml), name, graphml, true)
                           : convert(read_boost<Undirected>(text, name, graphml), name, graphml, false);
  return g;
}

FabricGraph read_fabric_graph(const std::string& file) {
  return parse_fabric_graph(read_file_text(file, "cannot read the graph file"), file);
}

namespace {

/// Whether every link has a reverse (written as one undirected edge).
bool full_duplex(const FabricGraph& g) {
  std::map<std::pair<uint32_t, uint32_t>, int> count;
  for (const auto& l : g.links) ++count[{l.from, l.to}];
  for (const auto& l : g.links) {
    if (count[{l.from, l.to}] != count[{l.to, l.from}]) return false;
  }
  return true;
}

std::string coord_text(const std::vector<int64_t>& c) {
  std::string s;
  for (size_t i = 0; i < c.size(); ++i) s += (i > 0 ? "," : "") + std::to_string(c[i]);
  return s;
}

std::string fmt(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

}  // namespace

std::string fabric_graphml(const FabricGraph& g) {
  const bool duplex = full_duplex(g);
  std::string out =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\">\n"
      "  <key id=\"kind\" for=\"node\" attr.name=\"kind\" attr.type=\"string\"/>\n"
      "  <key id=\"rank\" for=\"node\" attr.name=\"rank\" attr.type=\"long\"/>\n"
      "  <key id=\"transit\" for=\"node\" attr.name=\"transit\" attr.type=\"boolean\"/>\n"
      "  <key id=\"coord\" for=\"node\" attr.name=\"coord\" attr.type=\"string\"/>\n"
      "  <key id=\"bw\" for=\"edge\" attr.name=\"bw_GBps\" attr.type=\"double\"/>\n"
      "  <key id=\"lat\" for=\"edge\" attr.name=\"latency_ns\" attr.type=\"double\"/>\n"
      "  <key id=\"link\" for=\"edge\" attr.name=\"link\" attr.type=\"string\"/>\n";
  out += std::string("  <graph id=\"fabric\" edgedefault=\"") + (duplex ? "undirected" : "directed") + "\">\n";
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    const auto& n = g.nodes[v];
    out += "    <node id=\"n" + std::to_string(v) + "\"><data key=\"kind\">" + n.kind + "</data>";
    if (n.device) {
      out += "<data key=\"rank\">" + std::to_string(n.rank) + "</data>";
      if (n.transit) out += "<data key=\"transit\">true</data>";
      if (!n.coord.empty()) out += "<data key=\"coord\">" + coord_text(n.coord) + "</data>";
    }
    out += "</node>\n";
  }
  for (const auto& l : g.links) {
    if (duplex && l.from > l.to) continue;
    out += "    <edge source=\"n" + std::to_string(l.from) + "\" target=\"n" + std::to_string(l.to) +
           "\"><data key=\"bw\">" + fmt(l.bandwidth_GBps) + "</data><data key=\"lat\">" + fmt(l.latency_ns) +
           "</data><data key=\"link\">" + std::string(to_string(l.kind)) + "</data></edge>\n";
  }
  out += "  </graph>\n</graphml>\n";
  return out;
}

std::string fabric_dot(const FabricGraph& g) {
  const bool duplex = full_duplex(g);
  std::string out = std::string(duplex ? "graph" : "digraph") + " fabric {\n";
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    const auto& n = g.nodes[v];
    out += "  n" + std::to_string(v) + " [kind=\"" + n.kind + "\"";
    if (n.device) out += " rank=" + std::to_string(n.rank) + (n.transit ? " transit=true" : "");
    if (!n.coord.empty()) out += " coord=\"" + coord_text(n.coord) + "\"";
    out += n.device ? " shape=box" : " shape=ellipse";
    out += "];\n";
  }
  for (const auto& l : g.links) {
    if (duplex && l.from > l.to) continue;
    out += "  n" + std::to_string(l.from) + (duplex ? " -- n" : " -> n") + std::to_string(l.to) +
           " [bw_GBps=" + fmt(l.bandwidth_GBps) + " latency_ns=" + fmt(l.latency_ns) +
           " link=" + std::string(to_string(l.kind)) + "];\n";
  }
  out += "}\n";
  return out;
}

}  // namespace shardsim
