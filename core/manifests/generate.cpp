#include "core/manifests/generate.h"

#include "core/common/encoding.h"
#include "core/common/yaml.h"
#include "core/manifests/embedded_templates.h"
#include "core/manifests/render_context.h"
#include "core/manifests/template.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace powerctl::manifests {
namespace {

using json = nlohmann::ordered_json;

Status CheckRequiredFields(const GenerateRequest& request,
                           const std::vector<Component>& components) {
  const config::PowerctlConfig& c = request.config;
  if (std::vector<std::string> missing = MissingSettings(c, components); !missing.empty()) {
    return MakeError(ErrorCode::kInvalidInput, missing.front());
  }
  if (request.out_of_cluster) {
    if (request.kubeconfig_path.empty()) {
      return MakeError(ErrorCode::kInvalidInput,
                       "--out-of-cluster needs --kubeconfig PATH for the scheduler");
    }
    if (request.extender_url.empty()) {
      return MakeError(ErrorCode::kInvalidInput, "--out-of-cluster needs --extender-url URL");
    }
    if (request.extender_url.rfind("http://", 0) != 0 &&
        request.extender_url.rfind("https://", 0) != 0) {
      return MakeError(ErrorCode::kInvalidInput,
                       "--extender-url must start with http:// or https://");
    }
    bool https = request.extender_url.rfind("https://", 0) == 0;
    if (https != (c.extender.tls_mode != "insecure")) {
      return MakeError(
          ErrorCode::kInvalidInput,
          fmt::format("--extender-url scheme does not match extender.tlsMode {} (use {})",
                      c.extender.tls_mode,
                      c.extender.tls_mode == "insecure" ? "http://" : "https://"));
    }
    if (https && !request.cert_dir) {
      return MakeError(
          ErrorCode::kInvalidInput,
          "--out-of-cluster with TLS needs --cert-dir (or --output-dir) for the certificate files");
    }
  }
  return OkStatus();
}

Result<KeyMaterial> ObtainKeyMaterial(const GenerateRequest& request,
                                      std::vector<std::string>& notes) {
  if (request.keys) return *request.keys;
  CertificateRequest cert_request = ExtenderCertificateRequest(request.config);
  if (request.cert_dir) {
    const std::string dir = request.cert_dir->string();
    POWERCTL_TRY(obtained, ObtainCertDir(*request.cert_dir, cert_request));
    switch (obtained.source) {
      case CertDirSource::kReused:
        notes.push_back("using TLS material from " + dir);
        break;
      case CertDirSource::kSignedWithCa:
        notes.push_back(fmt::format(
            "signed new extender server and scheduler client certificates with the CA in {} "
            "({}, {}); wrote {} there (keys mode 0600)",
            dir, kCaCertFile, kCaKeyFile, fmt::join(obtained.written, ", ")));
        break;
      case CertDirSource::kCreated:
        notes.push_back("wrote new TLS material to " + dir +
                        " (CA, extender server and scheduler client certificates; keys mode "
                        "0600); later runs with --cert-dir " +
                        dir + " reuse it");
        break;
    }
    return std::move(obtained.material);
  }
  POWERCTL_TRY(generated, GenerateKeyMaterial(cert_request));
  notes.push_back(
      "generated new TLS material (CA, extender server and scheduler client certificates): "
      "applying it restarts the extender and the scheduler; pass --cert-dir DIR to keep the "
      "same material from run to run");
  return generated;
}

Result<std::vector<json>> RenderFile(const std::string& file, const json& context,
                                     const std::optional<std::filesystem::path>& templates_dir) {
  POWERCTL_TRY(text, LoadTemplate(file, templates_dir));
  POWERCTL_TRY(rendered, RenderTemplate(file, text, context));
  POWERCTL_TRY(docs, ParseYamlDocuments(rendered, file + " (rendered)"));
  return docs;
}

Status CheckObject(const json& object, const std::string& file, std::size_t index) {
  auto fail = [&](const std::string& what) {
    return MakeError(ErrorCode::kInvalidInput,
                     fmt::format("{}: document {}: {}", file, index + 1, what));
  };
  if (!object.is_object()) return fail("is not a mapping");
  if (!object.contains("apiVersion") || !object["apiVersion"].is_string())
    return fail("missing apiVersion");
  if (!object.contains("kind") || !object["kind"].is_string()) return fail("missing kind");
  if (!object.contains("metadata") || !object["metadata"].is_object() ||
      !object["metadata"].contains("name") || !object["metadata"]["name"].is_string()) {
    return fail("missing metadata.name");
  }
  return OkStatus();
}

}  // namespace

void AddStandardLabels(json& object, Component component, const std::string& instance) {
  json& labels = object["metadata"]["labels"];
  if (!labels.is_object()) labels = json::object();
  labels["app.kubernetes.io/name"] = "powerctl";
  // A CRD is shared by every install in the cluster: it belongs to no instance.
  if (object.value("kind", "") != "CustomResourceDefinition")
    labels["app.kubernetes.io/instance"] = instance;
  labels["app.kubernetes.io/managed-by"] = "powerctl";
  labels["app.kubernetes.io/component"] = std::string(ComponentName(component));
}

std::vector<std::string> MissingSettings(const config::PowerctlConfig& c,
                                         const std::vector<Component>& components) {
  auto has = [&](Component x) {
    return std::find(components.begin(), components.end(), x) != components.end();
  };
  std::vector<std::string> missing;
  if (has(Component::kExtender) && c.extender.image.empty()) {
    missing.push_back("extender.image is required to generate the extender component");
  }
  if (has(Component::kLb) && c.extender.image.empty()) {
    missing.push_back(
        "extender.image is required to generate the lb component (the lb-agent runs the same "
        "powerctl image)");
  }
  if (has(Component::kModel) && c.predictor.model.image.empty() &&
      c.predictor.model.persistent_volume_claim.empty()) {
    missing.push_back(
        "predictor.model.image or predictor.model.persistentVolumeClaim is required to generate "
        "the model component (the SavedModel to serve)");
  }
  return missing;
}

Result<GenerateResult> Generate(const GenerateRequest& request) {
  if (request.templates_dir) POWERCTL_CHECK_OK(CheckTemplateOverrides(*request.templates_dir));
  POWERCTL_TRY(components, ResolveComponents(request.components, request.config));
  POWERCTL_CHECK_OK(CheckRequiredFields(request, components));

  GenerateResult result;
  bool tls = request.config.extender.tls_mode != "insecure";
  bool wants_secrets =
      std::find(components.begin(), components.end(), Component::kSecrets) != components.end();
  bool wants_scheduler =
      std::find(components.begin(), components.end(), Component::kScheduler) != components.end();
  bool wants_extender =
      std::find(components.begin(), components.end(), Component::kExtender) != components.end();
  // The Deployments' config-hash follows the certificates they mount: known when the Secrets
  // are rendered too, or kept in a --cert-dir.
  bool material_known = request.cert_dir || request.keys;
  std::optional<KeyMaterial> keys;
  if (tls && (wants_secrets || (request.out_of_cluster && wants_scheduler) ||
              (material_known && (wants_extender || wants_scheduler)))) {
    POWERCTL_TRY(material, ObtainKeyMaterial(request, result.notes));
    keys = std::move(material);
  }

  const bool wants_lb =
      std::find(components.begin(), components.end(), Component::kLb) != components.end();
  if (wants_lb && request.config.lb.mode == "ipvs" && request.version.AtLeast(35)) {
    // docs/load-balancing.md#lbmode-ipvs-weighting-kube-proxys-ipvs-real-servers
    result.warnings.push_back(fmt::format(
        "lb.mode ipvs: kube-proxy's IPVS mode is deprecated from Kubernetes 1.35 (behind the "
        "KubeProxyIPVS feature gate from 1.37); the target is {}: move kube-proxy and the "
        "lb-agent to nftables (lb.mode: nftables)",
        request.version.MinorString()));
  }

  if (request.out_of_cluster && wants_scheduler) {
    if (std::string gates = SchedulerFeatureGates(request.version); !gates.empty()) {
      result.notes.push_back(fmt::format(
          "start kube-scheduler {} with --feature-gates={} (docs/setup.md#out-of-the-cluster)",
          request.version.MinorString(), gates));
    }
  }

  RenderOptions options;
  options.version = request.version;
  options.out_of_cluster = request.out_of_cluster;
  options.kubeconfig_path = request.kubeconfig_path;
  options.extender_url = request.extender_url;
  options.cert_dir = request.cert_dir ? std::filesystem::absolute(*request.cert_dir).string() : "";
  options.keys = keys ? &*keys : nullptr;
  json context = BuildRenderContext(request.config, options);

  // The scheduler configuration is rendered first: the ConfigMap embeds it as text.
  POWERCTL_TRY(scheduler_config,
               RenderFile("scheduler-config.yaml", context, request.templates_dir));
  if (scheduler_config.size() != 1 || !scheduler_config[0].is_object()) {
    return MakeError(ErrorCode::kInvalidInput,
                     "scheduler-config.yaml must render exactly one document");
  }
  std::string config_text = EmitYaml(scheduler_config[0]);
  context["scheduler"]["configText"] = config_text;
  context["scheduler"]["configHash"] =
      keys ? ConfigHash(config_text, {keys->ca_cert, keys->client_cert}) : ConfigHash(config_text);

  for (Component component : components) {
    GeneratedComponent out{component, {}, component == Component::kSecrets};
    if (request.out_of_cluster && component == Component::kScheduler) {
      out.objects = scheduler_config;  // a file for kube-scheduler --config, not an API object
      result.components.push_back(std::move(out));
      continue;
    }
    if (request.out_of_cluster && component == Component::kSecrets)
      continue;  // files in cert_dir instead
    std::string file = std::string(ComponentName(component)) + ".yaml";
    POWERCTL_TRY(objects, RenderFile(file, context, request.templates_dir));
    for (std::size_t i = 0; i < objects.size(); ++i) {
      POWERCTL_CHECK_OK(CheckObject(objects[i], file, i));
      AddStandardLabels(objects[i], component, request.config.namespace_);
    }
    out.objects = std::move(objects);
    result.components.push_back(std::move(out));
  }
  return result;
}

}  // namespace powerctl::manifests
