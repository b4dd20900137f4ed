// The knowledge area's JSON shapes, as the REST API answers them (the same the saip_knowledge_* tools return).

export interface Document {
  name: string;
  id: string;
  title: string | null;
  sourceKind: string;
  source: string;
  mediaType: string;
  sizeBytes: number;
  chunks: number;
  pages: number | null;
  createdAt: string;
  managedBy: string | null;
}

export interface Pipeline {
  name: string;
  documents: string[];
  scope: string;
  topK: number;
  threshold: number;
  rerank: boolean;
  managedBy: string | null;
  updatedAt: string;
}

export interface KnowledgeTool {
  name: string;
  description: string;
  pipeline: string;
  publishedAt: string;
}

export interface Hit {
  document: string;
  source: string;
  position: number;
  page: number | null;
  score: number;
  relevance: number;
  text: string;
}

export interface Suggestion {
  name: string;
  description: string;
  pipeline: string;
  documents: string[];
  publishedAs: string | null;
}

export interface Status {
  documents: number;
  chunks: number;
  pipelines: number;
  tools: KnowledgeTool[];
  ingestRoots: string[];
  maxDocumentBytes: number;
  vectorStore: string;
  encoder: string;
}
