{{/* Names and labels as `helm create` writes them: <release>-ctlplane, or the release's name when it
contains "ctlplane" (`helm install ctlplane` names every object ctlplane, as the kustomize base does). */}}
{{- define "ctlplane.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ctlplane.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "ctlplane.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ctlplane.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ctlplane.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "ctlplane.labels" -}}
helm.sh/chart: {{ include "ctlplane.chart" . }}
{{ include "ctlplane.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The container's variables: each of secretEnv from its Secret (`optional`, as in the kustomize base: a
cluster without JMX authentication needs no Secret), and the StatefulSet's shard. */}}
{{- define "ctlplane.env" -}}
{{- range .Values.secretEnv }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      {{- $message := printf "secretEnv %s: set existingSecret or the entry's secret" .name }}
      name: {{ .secret | default $.Values.existingSecret | required $message }}
      key: {{ .key }}
      optional: true
{{- end }}
{{- if eq .Values.mode "sharded" }}
- name: CTLPLANE_SHARD
  value: auto/{{ .Values.shards }}
{{- end }}
{{- end }}
