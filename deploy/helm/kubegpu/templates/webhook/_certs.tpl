{{/*
Webhook serving certificate, mode "helm": a CA and a certificate for the Service DNS name, generated once.
On upgrade the existing Secret is looked up and reused (tls.crt, tls.key, ca.crt), so the certificate and
caBundle do not change with every `helm upgrade`. Computed once per render and cached in .Values so the
Secret and both webhook configurations see the same CA.
*/}}
{{- define "kubegpu.webhookHelmCerts" -}}
{{- if not (hasKey .Values.webhook.certs "_generated") -}}
{{- $secretName := printf "%s-tls" (include "kubegpu.name" (list . "webhook")) -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace $secretName -}}
{{- $data := dict -}}
{{- if and $existing (index $existing "data") (index $existing.data "ca.crt") (index $existing.data "tls.crt") (index $existing.data "tls.key") -}}
{{- $data = dict "ca.crt" (index $existing.data "ca.crt") "tls.crt" (index $existing.data "tls.crt") "tls.key" (index $existing.data "tls.key") -}}
{{- else -}}
{{- $days := int .Values.webhook.certs.validityDays -}}
{{- $ca := genCA (printf "%s-ca" (include "kubegpu.name" (list . "webhook"))) $days -}}
{{- $host := include "kubegpu.webhookHost" . -}}
{{- $cert := genSignedCert $host nil (list $host (printf "%s.%s" (include "kubegpu.name" (list . "webhook")) .Release.Namespace)) $days $ca -}}
{{- $data = dict "ca.crt" ($ca.Cert | b64enc) "tls.crt" ($cert.Cert | b64enc) "tls.key" ($cert.Key | b64enc) -}}
{{- end -}}
{{- $_ := set .Values.webhook.certs "_generated" $data -}}
{{- end -}}
{{- toYaml .Values.webhook.certs._generated -}}
{{- end -}}

{{/* caBundle of the webhook configurations: the CA in mode helm; empty (cainjector fills it) otherwise. */}}
{{- define "kubegpu.webhookCABundle" -}}
{{- if eq .Values.webhook.certs.mode "helm" -}}
{{- index (include "kubegpu.webhookHelmCerts" . | fromYaml) "ca.crt" -}}
{{- end -}}
{{- end -}}

{{- define "kubegpu.webhookAnnotations" -}}
{{- if eq .Values.webhook.certs.mode "certManager" -}}
annotations:
  cert-manager.io/inject-ca-from: {{ printf "%s/%s-tls" .Release.Namespace (include "kubegpu.name" (list . "webhook")) }}
{{- end -}}
{{- end -}}

{{- define "kubegpu.webhookNamespaceSelector" -}}
matchExpressions:
  - key: kubegpu.io/admission
    operator: NotIn
    values: ["disabled"]
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: {{ concat .Values.webhook.excludedNamespaces (list .Release.Namespace) | uniq | toJson }}
{{- end -}}
