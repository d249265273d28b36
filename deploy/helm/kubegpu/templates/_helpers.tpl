{{/*
Object names: "<release>-<component>", or "kubegpu-<component>" when the release name already contains
"kubegpu" (so `helm install kubegpu` gives kubegpu-scheduler, kubegpu-webhook, ...).
*/}}
{{- define "kubegpu.prefix" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The name of one component's objects: (list $ "scheduler") */}}
{{- define "kubegpu.name" -}}
{{- printf "%s-%s" (include "kubegpu.prefix" (index . 0)) (index . 1) -}}
{{- end -}}

{{/* Selector labels of one component: (list $ "scheduler") */}}
{{- define "kubegpu.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "kubegpu.name" . }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
{{- end -}}

{{/* All labels of one component's objects: (list $ "scheduler") */}}
{{- define "kubegpu.labels" -}}
{{- $root := index . 0 -}}
{{ include "kubegpu.selectorLabels" . }}
app.kubernetes.io/component: {{ index . 1 }}
app.kubernetes.io/part-of: kubegpu
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version }}
{{- end -}}

{{- define "kubegpu.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* Pod-level securityContext of the components that meet PodSecurity "restricted". */}}
{{- define "kubegpu.restrictedPodSecurity" -}}
runAsNonRoot: true
runAsUser: {{ .Values.restrictedUser }}
runAsGroup: {{ .Values.restrictedUser }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Container-level securityContext shared by every kubegpu container. */}}
{{- define "kubegpu.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* image, imagePullPolicy of a container */}}
{{- define "kubegpu.containerImage" -}}
image: {{ include "kubegpu.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
{{- end -}}

{{/* nodeSelector, tolerations and imagePullSecrets of a pod spec from a component's values */}}
{{- define "kubegpu.podPlacement" -}}
{{- $root := index . 0 -}}
{{- $values := index . 1 -}}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The webhook Service's DNS name: the serving certificate's subject alternative name. */}}
{{- define "kubegpu.webhookHost" -}}
{{- printf "%s.%s.svc" (include "kubegpu.name" (list . "webhook")) .Release.Namespace -}}
{{- end -}}

{{/* The PodSecurity level the release namespace needs for the enabled components. */}}
{{- define "kubegpu.podSecurityLevel" -}}
{{- if or .Values.nodeAgent.enabled .Values.exporter.enabled -}}privileged{{- else -}}restricted{{- end -}}
{{- end -}}
